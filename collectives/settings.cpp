#include "collectives/settings.hpp"

#include "collectives/registry.hpp"
#include "collectives/tuning_table.hpp"

#if defined(TB_HAVE_UCX)
#include <ucp/api/ucp.h>
#endif

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

extern char** environ;

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

// Decimal digits only: no sign, no spaces (strtoll and strtoull would skip spaces, and strtoull
// would wrap " -1" to 2^64 - 1).
bool digits_only(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// A whole decimal integer in [low, high], or nothing.
std::optional<long long> integer(const std::string& text, long long low, long long high) {
  if (!digits_only(text)) return std::nullopt;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < low || v > high) return std::nullopt;
  return v;
}

// " (at most high)" where `text` is a whole number above `high`: the limit the user ran into.
std::string limit_note(const std::string& text, unsigned long long high) {
  if (!digits_only(text)) return "";
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  return errno == ERANGE || v > high ? " (at most " + std::to_string(high) + ")" : "";
}

template <class T>
Setting<T> integer_setting(const char* name, T fallback, long long low, long long high, std::string_view expected) {
  const auto text = env(name);
  if (!text) return Setting<T>(fallback);
  const auto v = integer(*text, low, high);
  if (!v) return Setting<T>::invalid(malformed(name, *text, expected) + limit_note(*text, high));
  return Setting<T>(static_cast<T>(*v));
}

Setting<std::uint64_t> seed_setting(const char* name) {
  const auto text = env(name);
  if (!text) return Setting<std::uint64_t>(20261130u);
  errno = 0;
  const unsigned long long v = digits_only(*text) ? std::strtoull(text->c_str(), nullptr, 10) : 0;
  if (!digits_only(*text) || errno == ERANGE)
    return Setting<std::uint64_t>::invalid(malformed(name, *text, "an unsigned integer") +
                                           limit_note(*text, std::numeric_limits<std::uint64_t>::max()));
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

// Why `path` cannot be opened for appending, or "" when it can; nothing is created. A file that
// exists must be writable and not a folder; a new file needs a writable folder to be made in.
std::string unwritable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "it is a directory";
    return access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  }
  if (errno != ENOENT) return std::strerror(errno);
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  if (stat(folder.c_str(), &st) != 0) return "folder " + folder + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return folder + " is not a directory";
  return access(folder.c_str(), W_OK | X_OK) == 0 ? "" : "folder " + folder + ": " + std::strerror(errno);
}

// An output file's path ("" = off), refused here when it cannot be written, so that a typo fails
// before any work rather than losing the output at the end.
Setting<std::string> output_path_setting(const char* name) {
  const auto text = env(name);
  if (!text) return Setting<std::string>("");
  const std::string why = unwritable(*text);
  if (!why.empty())
    return Setting<std::string>::invalid(std::string(name) + "='" + *text + "': cannot be written (" + why + ")");
  return Setting<std::string>(*text);
}

Setting<std::vector<std::string>> path_list(const char* name) {
  std::vector<std::string> paths;
  std::istringstream in(env(name).value_or(""));
  for (std::string path; std::getline(in, path, ':');) {
    if (path.empty()) continue;
    if (std::find(paths.begin(), paths.end(), path) != paths.end())
      return Setting<std::vector<std::string>>::invalid(std::string(name) + ": '" + path + "' is listed twice");
    paths.push_back(path);
  }
  return Setting<std::vector<std::string>>(paths);
}

Setting<NodeLeaderRule> leader_setting() {
  const char* name = "TB_NODE_LEADERS";
  const auto text = env(name);
  if (!text) return Setting<NodeLeaderRule>(NodeLeaderRule{});
  if (*text == "numa") return Setting<NodeLeaderRule>(NodeLeaderRule{.numa = true, .per_node = 1});
  const auto k = integer(*text, 1, std::numeric_limits<int>::max());
  if (!k)
    return Setting<NodeLeaderRule>::invalid(malformed(name, *text, "a positive integer or numa") +
                                            limit_note(*text, std::numeric_limits<int>::max()));
  return Setting<NodeLeaderRule>(NodeLeaderRule{.numa = false, .per_node = static_cast<int>(*k)});
}

// Seconds in (0, 1e9], written as a decimal number (strtod alone would also take spaces, hex,
// inf and nan).
Setting<double> seconds_setting(const char* name, double fallback) {
  const auto text = env(name);
  if (!text) return Setting<double>(fallback);
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->find_first_not_of("0123456789.eE+-") != std::string::npos || end == text->c_str() || *end != '\0' ||
      !(v > 0) || v > 1e9)
    return Setting<double>::invalid(malformed(name, *text, "seconds > 0, at most 1e9"));
  return Setting<double>(v);
}

// Both ways of forming virtual nodes set: each setting carries the error, wherever it is read.
void refuse_both_node_settings(Settings& s) {
  const bool both = s.ranks_per_node.error().empty() && s.num_nodes.error().empty() && s.ranks_per_node.get() > 0 &&
                    s.num_nodes.get() > 0;
  if (!both) return;
  const std::string error = "TB_RANKS_PER_NODE and TB_NUM_NODES are both set; set one";
  s.ranks_per_node = Setting<int>::invalid(error);
  s.num_nodes = Setting<int>::invalid(error);
}

// The TB_UCX_<NAME> variables that UCX reads for ucx_zcopy's context (all but the testbed's own
// TB_UCX_PACK_BELOW and TB_UCX_TIMEOUT_S), as (NAME, value).
std::vector<std::pair<std::string, std::string>> ucx_own_settings() {
  std::vector<std::pair<std::string, std::string>> found;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::size_t equals = entry.find('=');
    if (!entry.starts_with("TB_UCX_") || equals == std::string_view::npos) continue;
    const std::string name(entry.substr(7, equals - 7));
    if (name != "PACK_BELOW" && name != "TIMEOUT_S") found.emplace_back(name, std::string(entry.substr(equals + 1)));
  }
  return found;
}

// UCX reads a TB_UCX_<NAME> that is set but empty as an empty value (TB_UCX_TLS='': no transports
// at all), not as unset as the testbed's settings do, and checks the values only when ucx_zcopy
// starts its context: both are refused here, before any work. A value is checked by UCX's own
// parser (ucp_config_modify), which also logs what it expects.
void check_ucx_settings() {
  const auto own = ucx_own_settings();
  for (const auto& [name, value] : own)
    if (value.empty())
      throw std::invalid_argument("TB_UCX_" + name + " is set but empty, which UCX reads as an empty value, " +
                                  "not as unset: unset it or give a value");
#if defined(TB_HAVE_UCX)
  if (own.empty()) return;
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return;  // UCX_* are the MPI library's business
  std::string error;
  for (const auto& [name, value] : own) {
    const ucs_status_t status = ucp_config_modify(config, name.c_str(), value.c_str());
    if (status != UCS_OK) {
      error = "TB_UCX_" + name + "='" + value + "': UCX refuses it (" + ucs_status_string(status) + ")";
      break;
    }
  }
  ucp_config_release(config);
  if (!error.empty()) throw std::invalid_argument(error);
#endif
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
  s.alltoallw_record = output_path_setting("TB_ALLTOALLW_RECORD");
  s.checked = choice_setting("TB_CHECKED", false, {{"0", false}, {"1", true}}, "0 or 1");
  s.ranks_per_node = integer_setting<int>("TB_RANKS_PER_NODE", 0, 1, 1 << 20, "a positive integer");
  s.num_nodes = integer_setting<int>("TB_NUM_NODES", 0, 1, 1 << 20, "a positive integer");
  refuse_both_node_settings(s);
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
       {&s.alltoallw.error(), &s.tuning_table.error(), &s.auto_agreement.error(), &s.redistribution_agreement.error(),
        &s.algorithm_plugins.error(), &s.alltoallw_verbose.error(), &s.alltoallw_record.error(), &s.checked.error(),
        &s.ranks_per_node.error(), &s.num_nodes.error(), &s.node_order.error(), &s.node_leaders.error(),
        &s.node_leader_copy.error(), &s.streaming_stores.error(), &s.ucx_pack_below.error(),
        &s.ucx_timeout_s.error(), &s.conformance_seed.error(), &s.conformance_cases.error(),
        &s.conformance_shared_send.error(), &s.fft_test_seed.error()})
    if (!error->empty()) throw std::invalid_argument(*error);
  check_ucx_settings();
  // The plugins load now (the registry's first use), so that one that cannot be loaded, or that
  // registers no algorithm, is an error before any work.
  if (!s.algorithm_plugins.get().empty()) alltoallw_algorithms();
  // TB_ALLTOALLW must name a registered algorithm (plugins included) even where a tool names its
  // own: a typo would otherwise go unnoticed. make_alltoallw("") throws the registry's error,
  // which names the variable and lists the algorithms.
  const std::string& chosen = s.alltoallw.get();
  if (!chosen.empty() && !is_alltoallw_algorithm(chosen)) make_alltoallw("");
  // A tuning table that is missing or malformed is an error before any work, naming the file.
  if (!s.tuning_table.get().empty()) tuning_table(s.tuning_table.get());
}

}  // namespace tb
