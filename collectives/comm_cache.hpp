// State cached on a user's communicator with an attribute keyval, as MPI libraries do: created
// on first use, destroyed by the attribute's delete callback when the communicator is freed.
#pragma once

#include "collectives/mpi_error.hpp"

#include <mpi.h>

namespace tb {

// A duplicate of `comm` for the testbed's own point-to-point traffic, so that it can never
// match the user's messages. Created once per communicator.
MPI_Comm private_comm(MPI_Comm comm);

// Sets `value` as comm's attribute `key` on every rank of comm or on none: a rank whose
// MPI_Comm_set_attr failed tells the others (one MPI_Allreduce over comm, two on an
// intercommunicator), and the ranks that had set it delete it again, so their delete callbacks
// free `value`. The states cached below are freed collectively (windows, communicators): one rank
// freeing its state while the others keep theirs would leave a later teardown waiting forever.
// Collective. Returns MPI_SUCCESS, or the error: this rank's own, MPI_ERR_OTHER where only another
// rank failed, or that of the agreement itself (then no rank knows what the others did, and the
// attribute stays where it was set). *caller_frees: whether the caller must free `value` (this
// rank's MPI_Comm_set_attr failed), never where the attribute holds it or its callback freed it.
int set_attr_on_every_rank(MPI_Comm comm, int key, void* value, bool* caller_frees);

// Throws MpiError for a failed set_attr_on_every_rank.
void check_attached(int code);

}  // namespace tb

namespace tb {

// State of type T cached on communicators with one attribute keyval (node_leader's windows,
// ucx_zcopy's UCX endpoints): created on first use, deleted with its communicator. At the start
// of MPI_Finalize (when MPI_COMM_SELF's attributes go) the state on MPI_COMM_WORLD is deleted
// while every rank can still take part; states still alive on other communicators are then
// left to process exit, since deleting them may be collective in an order no one can agree on.
template <class T>
class CommCache {
 public:
  static T* find(MPI_Comm comm) {
    if (key_ == MPI_KEYVAL_INVALID) return nullptr;
    void* value = nullptr;
    int found = 0;
    check_mpi(PMPI_Comm_get_attr(comm, key_, &value, &found), "MPI_Comm_get_attr");
    return found ? static_cast<T*>(value) : nullptr;
  }

  // The state on comm; create(comm) makes it (a new T*) on first use, which is collective.
  template <class Create>
  static T& get(MPI_Comm comm, Create create) {
    if (key_ == MPI_KEYVAL_INVALID) {
      check_mpi(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &key_, nullptr), "MPI_Comm_create_keyval");
      check_mpi(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &finalize_key_, nullptr),
                "MPI_Comm_create_keyval");
      check_mpi(PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_key_, nullptr), "MPI_Comm_set_attr");
    }
    if (T* state = find(comm)) return *state;
    T* state = create(comm);
    bool caller_frees = false;
    const int rc = set_attr_on_every_rank(comm, key_, state, &caller_frees);
    if (rc != MPI_SUCCESS) {
      if (caller_frees) delete state;  // at the moment the other ranks' delete callbacks free theirs
      check_attached(rc);
    }
    return *state;
  }

 private:
  static int delete_state(MPI_Comm, int, void* value, void*) {
    if (!finalizing_) delete static_cast<T*>(value);
    return MPI_SUCCESS;
  }
  static int on_finalize(MPI_Comm, int, void*, void*) {
    // Only where there is one: Open MPI fails (fatally, under MPI_ERRORS_ARE_FATAL) to delete an
    // attribute that was never set, e.g. a state cached on other communicators only.
    // Not under SimGrid SMPI (TB_SMPI): it deletes MPI_COMM_SELF's attributes after it has ended
    // MPI for the rank, so every MPI call there fails (MPI_ERR_OTHER) and the state on
    // MPI_COMM_WORLD is left to the simulation's end, as states on other communicators are.
#if !defined(TB_SMPI)
    if (key_ != MPI_KEYVAL_INVALID && find(MPI_COMM_WORLD) != nullptr) PMPI_Comm_delete_attr(MPI_COMM_WORLD, key_);
#endif
    finalizing_ = true;
    return MPI_SUCCESS;
  }
  static inline int key_ = MPI_KEYVAL_INVALID;
  static inline int finalize_key_ = MPI_KEYVAL_INVALID;
  static inline bool finalizing_ = false;
};

}  // namespace tb
