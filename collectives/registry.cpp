#include "collectives/registry.hpp"

#include "collectives/native.hpp"
#include "collectives/node_leader.hpp"
#include "collectives/pack_alltoallv.hpp"
#include "collectives/pairwise.hpp"
#if TB_HAVE_UCX
#include "collectives/ucx_zcopy.hpp"
#endif

#include <array>
#include <cstdlib>
#include <stdexcept>

namespace tb {
namespace {

template <class Algorithm>
std::unique_ptr<AlltoallwAlgorithm> make() {
  return std::make_unique<Algorithm>();
}

const std::array kAlgorithms{
    AlltoallwAlgorithmInfo{"native", "the MPI library's own MPI_Alltoallw (PMPI_Alltoallw)", &make<NativeAlltoallw>},
    AlltoallwAlgorithmInfo{"pairwise", "P-1 Sendrecv steps on the user's datatypes, self block copied locally",
                           &make<PairwiseAlltoallw>},
    AlltoallwAlgorithmInfo{"pack_alltoallv", "own packer from flattened block lists + MPI_Alltoallv of bytes",
                           &make<PackAlltoallv>},
    AlltoallwAlgorithmInfo{"node_leader",
                           "on-node data through shared memory, one aggregated message per node pair via leaders",
                           &make<NodeLeaderAlltoallw>},
#if TB_HAVE_UCX
    AlltoallwAlgorithmInfo{"ucx_zcopy", "receiver-driven UCX gets of every contiguous piece, sender array to receiver array",
                           &make<UcxZcopyAlltoallw>},
#endif
};

}  // namespace

std::span<const AlltoallwAlgorithmInfo> alltoallw_algorithms() { return kAlgorithms; }

std::string default_alltoallw_name() {
  const char* env = std::getenv("TB_ALLTOALLW");
  return (env != nullptr && *env != '\0') ? std::string(env) : std::string("native");
}

bool is_alltoallw_algorithm(std::string_view name) {
  for (const auto& info : kAlgorithms)
    if (info.name == name) return true;
  return false;
}

std::unique_ptr<AlltoallwAlgorithm> make_alltoallw(std::string_view name) {
  const std::string chosen = name.empty() ? default_alltoallw_name() : std::string(name);
  for (const auto& info : kAlgorithms)
    if (info.name == chosen) return info.make();
  std::string known;
  for (const auto& info : kAlgorithms) known += (known.empty() ? "" : ", ") + std::string(info.name);
  std::string origin = name.empty() ? " (from TB_ALLTOALLW)" : "";
  throw std::invalid_argument("unknown Alltoallw algorithm '" + chosen + "'" + origin + "; registered: " + known);
}

std::string alltoallw_algorithm_list() {
  std::string text;
  for (const auto& info : kAlgorithms) {
    std::string name(info.name);
    name.resize(16, ' ');
    text += name + std::string(info.summary) + "\n";
  }
  return text;
}

}  // namespace tb
