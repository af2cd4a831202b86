#include "collectives/algorithm_support.hpp"

#include "collectives/every_rank.hpp"

namespace tb {
namespace {

constexpr int kFields = sizeof(ProblemRecord) / sizeof(std::int64_t);
static_assert(sizeof(ProblemRecord) == kFields * sizeof(std::int64_t));

// a is worse than b: higher severity, then the lower reporting rank.
bool worse(const ProblemRecord& a, const ProblemRecord& b) {
  if (a.severity != b.severity) return a.severity > b.severity;
  return a.severity != 0 && a.reporter < b.reporter;
}

void worst_of(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const ProblemRecord*>(in);
  auto* b = static_cast<ProblemRecord*>(inout);
  for (int i = 0; i < *len; ++i)
    if (worse(a[i], b[i])) b[i] = a[i];
}

// The record's datatype and the reduction, created once (after MPI_Init) and kept to the end.
struct Reduction {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
};
Reduction g_reduction;

// Freed when MPI_COMM_SELF's attributes go, at the start of MPI_Finalize.
int free_reduction(MPI_Comm, int, void*, void*) {
  if (g_reduction.op != MPI_OP_NULL) PMPI_Op_free(&g_reduction.op);
  if (g_reduction.type != MPI_DATATYPE_NULL) PMPI_Type_free(&g_reduction.type);
  return MPI_SUCCESS;
}

const Reduction& reduction() {
  if (g_reduction.op == MPI_OP_NULL) {
    TB_MPI_CHECK(PMPI_Type_contiguous(kFields, MPI_INT64_T, &g_reduction.type));
    TB_MPI_CHECK(PMPI_Type_commit(&g_reduction.type));
    TB_MPI_CHECK(PMPI_Op_create(&worst_of, 1, &g_reduction.op));
    int key = MPI_KEYVAL_INVALID;
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_reduction, &key, nullptr));
    TB_MPI_CHECK(PMPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr));
  }
  return g_reduction;
}

std::string class_name(int error_class) {
  switch (error_class) {
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
    default: return "MPI error class " + std::to_string(error_class);
  }
}

}  // namespace

std::string mismatch_text(std::string_view algorithm, int sender, std::int64_t sent, int receiver,
                          std::int64_t expected) {
  return std::string(algorithm) + ": rank " + std::to_string(sender) + " sends " + std::to_string(sent) +
         " bytes to rank " + std::to_string(receiver) + ", which expects " + std::to_string(expected) +
         (sent > expected ? " (truncated; type signatures differ)" : " (short message; type signatures differ)");
}

ProblemRecord mismatch_record(int reporter, int sender, std::int64_t sent, int receiver, std::int64_t expected) {
  return {.severity = sent > expected ? 2 : 1, .error_class = mismatch_class(sent, expected), .reporter = reporter,
          .sender = sender, .receiver = receiver, .sent = sent, .expected = expected};
}

ProblemRecord error_record(int reporter, int error_class) {
  return {.severity = 3, .error_class = error_class, .reporter = reporter};
}

ProblemRecord agree_on_problem(const ProblemRecord& mine, MPI_Comm comm) {
  // Whether any rank found anything: one MPI_Allreduce of a flag (MPI_MAX, the library's fastest
  // path), two on an intercommunicator. Only when one did do the records travel.
  std::int64_t seen = 0;
  check_mpi(max_over_every_rank(mine.severity, comm, &seen), "MPI_Allreduce (whether any rank found a problem)");
  if (seen == 0) return {};
  int inter = 0;
  TB_MPI_CHECK(PMPI_Comm_test_inter(comm, &inter));
  const Reduction& r = reduction();
  ProblemRecord all;
  TB_MPI_CHECK(PMPI_Allreduce(&mine, &all, 1, r.type, r.op, comm));
  if (!inter) return all;
  // An intercommunicator's reduction gives each group the other group's worst: a second round
  // with both folded in gives every rank the worst of both groups.
  ProblemRecord both = mine;
  if (worse(all, both)) both = all;
  TB_MPI_CHECK(PMPI_Allreduce(&both, &all, 1, r.type, r.op, comm));
  if (worse(both, all)) all = both;
  return all;
}

std::string problem_text(std::string_view algorithm, const ProblemRecord& record) {
  if (record.sender >= 0)
    return mismatch_text(algorithm, static_cast<int>(record.sender), record.sent, static_cast<int>(record.receiver),
                         record.expected) +
           " [found by rank " + std::to_string(record.reporter) + "]";
  return std::string(algorithm) + ": rank " + std::to_string(record.reporter) + " failed with " +
         class_name(static_cast<int>(record.error_class)) + " (its own error names the cause)";
}

}  // namespace tb
