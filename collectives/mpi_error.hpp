// Turning MPI return codes into C++ exceptions.
//
// The testbed's C++ API reports every failed MPI call as tb::MpiError, with the call that failed
// and MPI's own error string. Tools and tests set MPI_ERRORS_RETURN on the communicators they
// use so that errors reach these checks instead of aborting the job.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace tb {

class MpiError : public std::runtime_error {
 public:
  MpiError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

std::string mpi_error_string(int code);

// Throws MpiError naming `call` when `code` is not MPI_SUCCESS.
inline void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw MpiError(code, std::string(call) + " failed: " + mpi_error_string(code));
}

}  // namespace tb

// Evaluates an MPI call and throws tb::MpiError with the call's text if it fails.
#define TB_MPI_CHECK(call) ::tb::check_mpi((call), #call)
