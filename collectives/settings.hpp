// The testbed's settings: every TB_* environment variable, declared once (name, type, default,
// meaning) and parsed once. A malformed value is kept as an error naming the variable and the
// value; it is thrown where the setting is used, and by check_settings(), which every tool
// calls before it works. Tools print the table with --list-settings.
//
// Variables named TB_UCX_<NAME> are not parsed here: they are UCX's own settings, read by UCX
// for ucx_zcopy's context alone (e.g. TB_UCX_TLS=self,tcp). check_settings() refuses one that is
// set but empty, and, in a build with UCX, one whose value UCX's parser refuses.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

struct SettingInfo {
  std::string_view name;
  std::string_view type;           // what a value looks like
  std::string_view default_value;  // what applies when the variable is unset or empty
  std::string_view meaning;
  std::string_view used_by;
};

// Every declared setting, in the order of the README table.
std::span<const SettingInfo> setting_list();

// The table for --list-settings: each setting, its default, its meaning, and its value here.
std::string settings_table();

// A parsed setting: its value, or the error its text gave (thrown on use).
template <class T>
class Setting {
 public:
  Setting() = default;
  explicit Setting(T value) : value_(std::move(value)) {}
  static Setting invalid(std::string error) {
    Setting s;
    s.error_ = std::move(error);
    return s;
  }
  const T& get() const {
    if (!error_.empty()) throw std::invalid_argument(error_);
    return value_;
  }
  const std::string& error() const { return error_; }

 private:
  T value_{};
  std::string error_;
};

enum class NodeOrder { block, round_robin };
enum class NodeLeaderCopy { automatic, staged };
enum class StreamingStores { automatic, never, always };
enum class AutoAgreement { each_call, each_call_allreduce, assume_same };
enum class RedistributionAgreement { each_call, each_call_allreduce, assume_same };

struct NodeLeaderRule {
  bool numa = false;  // the first rank bound inside each NUMA domain leads
  int per_node = 1;   // otherwise: this many leaders per node
};

struct Settings {
  Setting<std::string> alltoallw;                       // TB_ALLTOALLW ("" = native)
  Setting<std::string> tuning_table;                    // TB_TUNING_TABLE ("" = auto's built-in rule)
  Setting<AutoAgreement> auto_agreement;                // TB_AUTO_AGREEMENT
  Setting<RedistributionAgreement> redistribution_agreement;  // TB_REDISTRIBUTION_AGREEMENT
  Setting<std::vector<std::string>> algorithm_plugins;  // TB_ALGORITHM_PLUGINS
  Setting<int> alltoallw_verbose;                       // TB_ALLTOALLW_VERBOSE
  Setting<std::string> alltoallw_record;                // TB_ALLTOALLW_RECORD ("" = off; refused if unwritable)
  Setting<bool> checked;                                // TB_CHECKED
  Setting<int> ranks_per_node;                          // TB_RANKS_PER_NODE (0 = unset)
  Setting<int> num_nodes;                               // TB_NUM_NODES (0 = unset)
  Setting<NodeOrder> node_order;                        // TB_NODE_ORDER
  Setting<NodeLeaderRule> node_leaders;                 // TB_NODE_LEADERS
  Setting<NodeLeaderCopy> node_leader_copy;             // TB_NODE_LEADER_COPY
  Setting<StreamingStores> streaming_stores;            // TB_STREAMING_STORES
  Setting<std::int64_t> ucx_pack_below;                 // TB_UCX_PACK_BELOW
  Setting<double> ucx_timeout_s;                        // TB_UCX_TIMEOUT_S
  Setting<std::string> ucx_tls;                         // TB_UCX_TLS, UCX's own, read to report it
  Setting<std::uint64_t> conformance_seed;              // TB_CONFORMANCE_SEED (tests)
  Setting<int> conformance_cases;                       // TB_CONFORMANCE_CASES (tests, 0 = the test's own)
  Setting<bool> conformance_shared_send;                // TB_CONFORMANCE_SEND_BUFFER=shared (tests)
  Setting<std::uint64_t> fft_test_seed;                 // TB_FFT_TEST_SEED (tests)
};

// The settings as the environment gave them when first asked (or at the last reload).
const Settings& settings();

// Reads the environment again: for tests that change a variable within one process.
void reload_settings();

// Throws std::invalid_argument with the first malformed setting's error; then for TB_UCX_<NAME>
// values UCX refuses, and for TB_ALGORITHM_PLUGINS that cannot be loaded or register nothing
// (it loads them).
void check_settings();

}  // namespace tb
