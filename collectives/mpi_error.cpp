#include "collectives/mpi_error.hpp"

#include <vector>

namespace tb {

std::string mpi_error_string(int code) {
  // MPI_MAX_ERROR_STRING bounds the text by the standard; the buffer has room to spare so that a
  // library writing past it cannot overrun the stack, and the length is clamped to the buffer.
  std::vector<char> text(8 * static_cast<std::size_t>(MPI_MAX_ERROR_STRING) + 1, '\0');
  int length = 0;
  if (PMPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  if (length < 0 || static_cast<std::size_t>(length) >= text.size()) length = static_cast<int>(text.size() - 1);
  return std::string(text.data(), static_cast<std::size_t>(length));
}

}  // namespace tb
