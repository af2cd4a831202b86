#include "collectives/settings.hpp"

#include "collectives/registry.hpp"
#include "collectives/tuning_table.hpp"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>

namespace tb {
namespace {

const std::array kSettings{
    SettingInfo{"TB_ALLTOALLW", "algorithm name", "native",
                "the algorithm a plan or the PMPI library runs when none is named", "plans, libtb_alltoallw"},
    SettingInfo{"TB_TUNING_TABLE", "path", "(none: built-in rule)",
                "the tuning table (experiments/tune.py) from which auto chooses an algorithm per call", "auto"},
    SettingInfo{"TB_AUTO_AGREEMENT", "each-call, each-call-allreduce or assume-same", "each-call",
                "each-call: the ranks agree on auto's choice where it depends on the call's class (through "
                "shared memory when all share one node, else MPI_Allreduce); each-call-allreduce: always "
                "MPI_Allreduce (for comparison); assume-same: the application asserts every rank's own class "
                "gives the same choice (no agreement; TB_CHECKED=1 verifies it)",
                "auto"},
    SettingInfo{"TB_REDISTRIBUTION_AGREEMENT", "each-call, each-call-allreduce or assume-same", "each-call",
                "each-call: a SubarrayRedistribution agrees per call whether every rank passes the array "
                "addresses of its last call (through shared memory when all ranks share one node, else one "
                "MPI_Allreduce), before it starts its prepared call, until it has prepared one that rebinds "
                "(e.g. pairwise's, pack_alltoallv's, node_leader's without direct copies), which then needs "
                "none; each-call-allreduce: always MPI_Allreduce (for comparison); assume-same: the application "
                "asserts its ranks change those addresses together (no agreement; TB_CHECKED=1 verifies it "
                "for prepared calls that do not rebind)",
                "redistribute, fft"},
    SettingInfo{"TB_ALGORITHM_PLUGINS", "paths, ':'-separated", "(none)",
                "shared libraries of extra algorithms, loaded on the registry's first use", "registry"},
    SettingInfo{"TB_ALLTOALLW_VERBOSE", "0, 1 or 2", "0",
                "1: one line per rank when the path changes and a count at MPI_Finalize; 2: every call",
                "libtb_alltoallw"},
    SettingInfo{"TB_ALLTOALLW_RECORD", "path", "(off)",
                "append every intracommunicator call's per-peer pattern as a JSON line (tb-model input)",
                "libtb_alltoallw"},
    SettingInfo{"TB_CHECKED", "0 or 1", "0",
                "1: before every Alltoallw the ranks exchange the bytes each sends and expects, and all raise on a "
                "mismatch (one MPI_Allgather of the sizes more per call; above 64 ranks an MPI_Alltoall and an "
                "MPI_Allreduce of a flag)",
                "every algorithm, libtb_alltoallw"},
    SettingInfo{"TB_RANKS_PER_NODE", "positive integer", "(unset)",
                "virtual nodes of this many consecutive ranks within each shared-memory node", "node layout"},
    SettingInfo{"TB_NUM_NODES", "positive integer", "(unset)",
                "this many virtual nodes within each shared-memory node (not with TB_RANKS_PER_NODE)", "node layout"},
    SettingInfo{"TB_NODE_ORDER", "block or round-robin", "block", "how TB_NUM_NODES deals ranks to virtual nodes",
                "node layout"},
    SettingInfo{"TB_NODE_LEADERS", "positive integer or numa", "1",
                "leaders per node, or the first rank in each NUMA domain (hwloc)", "node_leader"},
    SettingInfo{"TB_NODE_LEADER_COPY", "auto or staged", "auto",
                "auto: one direct copy where the arrays are node-shared; staged: always through staging",
                "node_leader"},
    SettingInfo{"TB_STREAMING_STORES", "auto, never or always", "auto",
                "non-temporal stores for large copies of the testbed's packer", "packer"},
    SettingInfo{"TB_UCX_PACK_BELOW", "bytes >= 0", "4096",
                "peers whose blocks average fewer bytes are packed by the sender (0: never pack)", "ucx_zcopy"},
    SettingInfo{"TB_UCX_TIMEOUT_S", "seconds > 0", "60", "deadline of every UCX wait: a failure, never a hang",
                "ucx_zcopy"},
    SettingInfo{"TB_UCX_<NAME>", "UCX setting", "(UCX_<NAME>)",
                "UCX's own settings for ucx_zcopy's context alone, e.g. TB_UCX_TLS=self,tcp", "ucx_zcopy"},
    SettingInfo{"TB_CONFORMANCE_SEED", "unsigned integer", "20261130", "seed of the randomised conformance cases",
                "tests"},
    SettingInfo{"TB_CONFORMANCE_CASES", "positive integer", "(per test)", "how many random cases a test runs",
                "tests"},
    SettingInfo{"TB_CONFORMANCE_SEND_BUFFER", "private or shared", "private",
                "shared: conformance send arrays in node-shared memory", "tests"},
    SettingInfo{"TB_FFT_TEST_SEED", "unsigned integer", "20261130", "seed of the FFT tests' random arrays", "tests"},
};

std::optional<std::string> env(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::string(text);
}

std::string malformed(const char* name, const std::string& text, std::string_view expected) {
  return std::string(name) + "='" + text + "': use " + std::string(expected);
}

// A whole decimal integer in [low, high], or nothing.
std::optional<long long> integer(const std::string& text, long long low, long long high) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE || v < low || v > high) return std::nullopt;
  return v;
}

template <class T>
Setting<T> integer_setting(const char* name, T fallback, long long low, long long high, std::string_view expected) {
  const auto text = env(name);
  if (!text) return Setting<T>(fallback);
  const auto v = integer(*text, low, high);
  if (!v) return Setting<T>::invalid(malformed(name, *text, expected));
  return Setting<T>(static_cast<T>(*v));
}

Setting<std::uint64_t> seed_setting(const char* name) {
  const auto text = env(name);
  if (!text) return Setting<std::uint64_t>(20261130u);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if ((*text)[0] == '-' || *end != '\0' || errno == ERANGE)
    return Setting<std::uint64_t>::invalid(malformed(name, *text, "an unsigned integer"));
  return Setting<std::uint64_t>(v);
}

template <class T>
Setting<T> choice_setting(const char* name, T fallback, std::initializer_list<std::pair<const char*, T>> choices,
                          std::string_view expected) {
  const auto text = env(name);
  if (!text) return Setting<T>(fallback);
  for (const auto& [word, value] : choices)
    if (*text == word) return Setting<T>(value);
  return Setting<T>::invalid(malformed(name, *text, expected));
}

Setting<std::string> text_setting(const char* name) { return Setting<std::string>(env(name).value_or("")); }

Setting<std::vector<std::string>> path_list(const char* name) {
  std::vector<std::string> paths;
  std::istringstream in(env(name).value_or(""));
  for (std::string path; std::getline(in, path, ':');)
    if (!path.empty()) paths.push_back(path);
  return Setting<std::vector<std::string>>(paths);
}

Setting<NodeLeaderRule> leader_setting() {
  const char* name = "TB_NODE_LEADERS";
  const auto text = env(name);
  if (!text) return Setting<NodeLeaderRule>(NodeLeaderRule{});
  if (*text == "numa") return Setting<NodeLeaderRule>(NodeLeaderRule{.numa = true, .per_node = 1});
  const auto k = integer(*text, 1, std::numeric_limits<int>::max());
  if (!k) return Setting<NodeLeaderRule>::invalid(malformed(name, *text, "a positive integer or numa"));
  return Setting<NodeLeaderRule>(NodeLeaderRule{.numa = false, .per_node = static_cast<int>(*k)});
}

Setting<double> seconds_setting(const char* name, double fallback) {
  const auto text = env(name);
  if (!text) return Setting<double>(fallback);
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(v > 0) || v > 1e9)
    return Setting<double>::invalid(malformed(name, *text, "seconds > 0"));
  return Setting<double>(v);
}

Settings read_environment() {
  constexpr long long int_max = std::numeric_limits<int>::max();
  Settings s;
  s.alltoallw = text_setting("TB_ALLTOALLW");
  s.tuning_table = text_setting("TB_TUNING_TABLE");
  s.auto_agreement = choice_setting("TB_AUTO_AGREEMENT", AutoAgreement::each_call,
                                    {{"each-call", AutoAgreement::each_call},
                                     {"each-call-allreduce", AutoAgreement::each_call_allreduce},
                                     {"assume-same", AutoAgreement::assume_same}},
                                    "each-call, each-call-allreduce or assume-same");
  s.redistribution_agreement = choice_setting("TB_REDISTRIBUTION_AGREEMENT", RedistributionAgreement::each_call,
                                              {{"each-call", RedistributionAgreement::each_call},
                                               {"each-call-allreduce", RedistributionAgreement::each_call_allreduce},
                                               {"assume-same", RedistributionAgreement::assume_same}},
                                              "each-call, each-call-allreduce or assume-same");
  s.algorithm_plugins = path_list("TB_ALGORITHM_PLUGINS");
  s.alltoallw_verbose = integer_setting<int>("TB_ALLTOALLW_VERBOSE", 0, 0, 2, "0, 1 or 2");
  s.alltoallw_record = text_setting("TB_ALLTOALLW_RECORD");
  s.checked = choice_setting("TB_CHECKED", false, {{"0", false}, {"1", true}}, "0 or 1");
  s.ranks_per_node = integer_setting<int>("TB_RANKS_PER_NODE", 0, 1, 1 << 20, "a positive integer");
  s.num_nodes = integer_setting<int>("TB_NUM_NODES", 0, 1, 1 << 20, "a positive integer");
  s.node_order = choice_setting("TB_NODE_ORDER", NodeOrder::block,
                                {{"block", NodeOrder::block}, {"round-robin", NodeOrder::round_robin}},
                                "block or round-robin");
  s.node_leaders = leader_setting();
  s.node_leader_copy = choice_setting("TB_NODE_LEADER_COPY", NodeLeaderCopy::automatic,
                                      {{"auto", NodeLeaderCopy::automatic}, {"staged", NodeLeaderCopy::staged}},
                                      "auto or staged");
  s.streaming_stores = choice_setting(
      "TB_STREAMING_STORES", StreamingStores::automatic,
      {{"auto", StreamingStores::automatic}, {"never", StreamingStores::never}, {"always", StreamingStores::always}},
      "auto, never or always");
  s.ucx_pack_below = integer_setting<std::int64_t>("TB_UCX_PACK_BELOW", 4096, 0, std::numeric_limits<long long>::max(),
                                                   "a block size in bytes (0: never pack)");
  s.ucx_timeout_s = seconds_setting("TB_UCX_TIMEOUT_S", 60.0);
  s.ucx_tls = text_setting("TB_UCX_TLS");
  s.conformance_seed = seed_setting("TB_CONFORMANCE_SEED");
  s.conformance_cases = integer_setting<int>("TB_CONFORMANCE_CASES", 0, 1, int_max, "a positive integer");
  s.conformance_shared_send = choice_setting("TB_CONFORMANCE_SEND_BUFFER", false,
                                             {{"private", false}, {"shared", true}}, "private or shared");
  s.fft_test_seed = seed_setting("TB_FFT_TEST_SEED");
  return s;
}

Settings& current() {
  static Settings s = read_environment();
  return s;
}

}  // namespace

std::span<const SettingInfo> setting_list() { return kSettings; }

std::string settings_table() {
  std::ostringstream out;
  out << "setting                     default      value here   meaning (type; used by)\n";
  for (const auto& s : kSettings) {
    std::string name(s.name), fallback(s.default_value);
    const char* now = s.name.find('<') == std::string_view::npos ? std::getenv(name.c_str()) : nullptr;
    std::string value = now != nullptr && *now != '\0' ? now : "-";
    name.resize(std::max<std::size_t>(name.size(), 27), ' ');
    fallback.resize(std::max<std::size_t>(fallback.size(), 12), ' ');
    value.resize(std::max<std::size_t>(value.size(), 12), ' ');
    out << name << ' ' << fallback << ' ' << value << ' ' << s.meaning << " (" << s.type << "; " << s.used_by
        << ")\n";
  }
  return out.str();
}

const Settings& settings() { return current(); }

void reload_settings() { current() = read_environment(); }

void check_settings() {
  const Settings& s = settings();
  for (const std::string* error :
       {&s.alltoallw.error(), &s.tuning_table.error(), &s.auto_agreement.error(), &s.redistribution_agreement.error(), &s.algorithm_plugins.error(), &s.alltoallw_verbose.error(), &s.alltoallw_record.error(),
        &s.checked.error(),         &s.ranks_per_node.error(), &s.num_nodes.error(), &s.node_order.error(), &s.node_leaders.error(),
        &s.node_leader_copy.error(), &s.streaming_stores.error(), &s.ucx_pack_below.error(),
        &s.ucx_timeout_s.error(), &s.conformance_seed.error(), &s.conformance_cases.error(),
        &s.conformance_shared_send.error(), &s.fft_test_seed.error()})
    if (!error->empty()) throw std::invalid_argument(*error);
  // TB_ALLTOALLW must name a registered algorithm (plugins included) even where a tool names its
  // own: a typo would otherwise go unnoticed. make_alltoallw("") throws the registry's error,
  // which names the variable and lists the algorithms.
  const std::string& chosen = s.alltoallw.get();
  if (!chosen.empty() && !is_alltoallw_algorithm(chosen)) make_alltoallw("");
  // A tuning table that is missing or malformed is an error before any work, naming the file.
  if (!s.tuning_table.get().empty()) tuning_table(s.tuning_table.get());
}

}  // namespace tb
