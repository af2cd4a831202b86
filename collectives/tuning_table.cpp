// Reading, checking and looking up the tuning table (format: tuning_table.hpp).
#include "collectives/tuning_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace tb {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "tb-alltoallw-tuning";
constexpr int kVersion = 1;

[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  throw std::invalid_argument("tuning table " + path + ": " + what +
                              " (TB_TUNING_TABLE; experiments/tune.py writes valid tables)");
}

// A field of `object` that must be there and hold what `valid` accepts.
template <class Valid>
const json& field(const json& object, const char* name, const std::string& where, const std::string& path,
                  const char* expected, Valid valid) {
  if (!object.is_object() || !object.contains(name)) invalid(path, where + " has no \"" + name + "\"");
  const json& value = object.at(name);
  if (!valid(value)) invalid(path, where + ": \"" + name + "\" must be " + expected + ", not " + value.dump());
  return value;
}

// get<std::int64_t> of a larger unsigned value is negative, so the bounds refuse it too.
bool is_count(const json& v) {
  return v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= INT_MAX;
}
bool is_bytes(const json& v) { return v.is_number_integer() && v.get<std::int64_t>() >= 0; }
bool is_bound(const json& v) { return v.is_null() || is_bytes(v); }
bool is_name(const json& v) { return v.is_string() && !v.get<std::string>().empty(); }

std::int64_t bound(const json& v) { return v.is_null() ? -1 : v.get<std::int64_t>(); }

// The keys a part of the table may hold: those auto reads and the evidence tune.py records beside
// them for people (sizes, median_s, worst_over_fastest, rule, measured_block_bytes). Any other key
// is refused: a misspelt "alternatives" would otherwise be ignored without a word.
void check_keys(const json& object, std::initializer_list<const char*> known, const std::string& where,
                const std::string& path) {
  for (const auto& item : object.items())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return item.key() == k; }))
      invalid(path, where + ": unknown key \"" + item.key() + "\"");
}

TuningLayoutClass parse_class(const json& j, std::size_t i, const std::string& path) {
  const std::string where = "layout_classes[" + std::to_string(i) + "]";
  TuningLayoutClass c;
  c.name = field(j, "name", where, path, "a non-empty string", is_name).get<std::string>();
  check_keys(j, {"name", "contiguous", "max_block_bytes", "measured_block_bytes"}, where, path);
  if (j.contains("contiguous") && !j.at("contiguous").is_boolean())
    invalid(path, where + ": \"contiguous\" must be true or false, not " + j.at("contiguous").dump());
  if (j.contains("contiguous") && j.at("contiguous") == true) {
    c.contiguous = true;
    return c;
  }
  c.max_block_bytes = bound(field(j, "max_block_bytes", where, path, "bytes (an integer >= 0) or null", is_bound));
  return c;
}

TuningNodeLayout parse_layout(const json& j, const std::string& where, const std::string& path) {
  const json& n = field(j, "node_layout", where, path, "an object", [](const json& v) { return v.is_object(); });
  const std::string inside = where + ".node_layout";
  check_keys(n, {"ranks", "nodes", "ranks_per_node"}, inside, path);
  const char* count = "an integer from 1 to 2147483647";
  TuningNodeLayout l;
  l.ranks = field(n, "ranks", inside, path, count, is_count).get<int>();
  l.nodes = field(n, "nodes", inside, path, count, is_count).get<int>();
  l.ranks_per_node = field(n, "ranks_per_node", inside, path, count, is_count).get<int>();
  // ranks_per_node is the largest node's: every other node holds at least one rank.
  if (l.nodes > l.ranks || l.ranks_per_node > l.ranks - (l.nodes - 1) ||
      l.ranks > std::int64_t{l.nodes} * l.ranks_per_node)
    invalid(path, inside + ": " + std::to_string(l.ranks) + " ranks cannot lie on " + std::to_string(l.nodes) +
                      " nodes with at most " + std::to_string(l.ranks_per_node) + " per node");
  return l;
}

TuningEntry parse_entry(const json& j, std::size_t i, const std::string& path,
                        const std::vector<TuningLayoutClass>& classes) {
  const std::string where = "entries[" + std::to_string(i) + "]";
  TuningEntry e;
  e.layout = parse_layout(j, where, path);
  check_keys(j, {"node_layout", "layout_class", "bytes_per_peer", "algorithm", "alternatives", "calls", "sizes",
                 "median_s", "worst_over_fastest", "rule"},
             where, path);
  e.layout_class = field(j, "layout_class", where, path, "a class name", is_name).get<std::string>();
  if (std::none_of(classes.begin(), classes.end(), [&](const auto& c) { return c.name == e.layout_class; }))
    invalid(path, where + ": layout_class \"" + e.layout_class + "\" is not in layout_classes");
  const json& band = field(j, "bytes_per_peer", where, path, "[min, max] (max null: unbounded)", [](const json& v) {
    return v.is_array() && v.size() == 2 && is_bytes(v[0]) && is_bound(v[1]);
  });
  e.min_bytes = band[0].get<std::int64_t>();
  e.max_bytes = bound(band[1]);
  if (e.max_bytes >= 0 && e.max_bytes < e.min_bytes) invalid(path, where + ": bytes_per_peer max below min");
  e.algorithms.push_back(field(j, "algorithm", where, path, "an algorithm name", is_name).get<std::string>());
  if (j.contains("alternatives")) {
    const json& more = j.at("alternatives");
    if (!more.is_array() || !std::all_of(more.begin(), more.end(), is_name))
      invalid(path, where + ": \"alternatives\" must be a list of algorithm names");
    for (const auto& a : more) e.algorithms.push_back(a.get<std::string>());
  }
  for (const auto& a : e.algorithms)
    if (a == "auto") invalid(path, where + ": auto cannot choose itself");
  if (j.contains("calls")) {
    const json& calls = j.at("calls");
    if (calls == "prepared") e.calls = TuningCalls::prepared;
    else if (calls == "persistent") e.calls = TuningCalls::persistent;
    else if (calls != "blocking")
      invalid(path, where + ": \"calls\" must be \"blocking\", \"prepared\" or \"persistent\", not " + calls.dump());
  }
  return e;
}

std::string calls_name(TuningCalls calls) {
  switch (calls) {
    case TuningCalls::blocking: return "blocking";
    case TuningCalls::prepared: return "prepared";
    case TuningCalls::persistent: return "persistent";
  }
  return "?";
}

// Bands of one (node layout, class, calls) must not overlap: a size has one answer.
void check_bands(std::vector<TuningEntry>& entries, const std::string& path) {
  std::stable_sort(entries.begin(), entries.end(), [](const TuningEntry& a, const TuningEntry& b) {
    return std::tie(a.layout.ranks, a.layout.nodes, a.layout.ranks_per_node, a.calls, a.layout_class,
                    a.min_bytes) < std::tie(b.layout.ranks, b.layout.nodes, b.layout.ranks_per_node, b.calls,
                                            b.layout_class, b.min_bytes);
  });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const TuningEntry &a = entries[i - 1], &b = entries[i];
    if (!(a.layout == b.layout) || a.layout_class != b.layout_class || a.calls != b.calls) continue;
    if (a.max_bytes < 0 || a.max_bytes >= b.min_bytes)
      invalid(path, "two " + calls_name(a.calls) + " entries for " + describe(a.layout) + ", class " +
                        a.layout_class + " overlap at " + std::to_string(b.min_bytes) + " bytes per peer");
  }
}

// How far `bytes` lies outside an entry's band (0: inside).
std::int64_t distance(const TuningEntry& e, std::int64_t bytes) {
  if (bytes < e.min_bytes) return e.min_bytes - bytes;
  if (e.max_bytes >= 0 && bytes > e.max_bytes) return bytes - e.max_bytes;
  return 0;
}

}  // namespace

std::string describe(const TuningNodeLayout& l) {
  return std::to_string(l.ranks) + " ranks on " + std::to_string(l.nodes) + (l.nodes == 1 ? " node" : " nodes") +
         " (" + std::to_string(l.ranks_per_node) + " per node)";
}

TuningTable TuningTable::parse(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    invalid(path, std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) invalid(path, "not a JSON object");
  if (!doc.contains("format") || doc["format"] != kFormat)
    invalid(path, std::string("\"format\" is not \"") + kFormat + "\"");
  const json& version = field(doc, "version", "the table", path, "an integer", [](const json& v) {
    return v.is_number_integer();
  });
  check_keys(doc, {"format", "version", "metadata", "layout_classes", "entries"}, "the table", path);
  if (version.get<std::int64_t>() != kVersion)
    invalid(path, "version " + version.dump() + ", this build reads version " + std::to_string(kVersion));
  TuningTable table;
  table.path_ = path;
  const json& classes = field(doc, "layout_classes", "the table", path, "a list", [](const json& v) { return v.is_array(); });
  for (std::size_t i = 0; i < classes.size(); ++i) {
    table.classes_.push_back(parse_class(classes[i], i, path));
    for (std::size_t k = 0; k < i; ++k)
      if (table.classes_[k].name == table.classes_[i].name)
        invalid(path, "layout_classes[" + std::to_string(i) + "]: the name \"" + table.classes_[i].name +
                          "\" is taken by layout_classes[" + std::to_string(k) + "]");
  }
  const json& entries = field(doc, "entries", "the table", path, "a list", [](const json& v) { return v.is_array(); });
  for (std::size_t i = 0; i < entries.size(); ++i)
    table.entries_.push_back(parse_entry(entries[i], i, path, table.classes_));
  check_bands(table.entries_, path);
  // auto takes a node layout without blocking entries for one the table lacks (the built-in rule).
  for (const auto& e : table.entries_)
    if (e.calls != TuningCalls::blocking && !table.has(e.layout))
      invalid(path, "the " + calls_name(e.calls) + " entries for " + describe(e.layout) +
                        " need blocking entries for that node layout too");
  return table;
}

TuningTable TuningTable::read(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) invalid(path, "is a directory");  // it opens, and reads as empty
  std::ifstream in(path);
  if (!in) invalid(path, "cannot be read (missing or unreadable)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) invalid(path, "cannot be read");
  if (text.str().empty()) invalid(path, "is empty");
  return parse(text.str(), path);
}

bool TuningTable::has(const TuningNodeLayout& layout, TuningCalls calls) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const TuningEntry& e) { return e.layout == layout && e.calls == calls; });
}

TuningCalls TuningTable::prepared_calls(const TuningNodeLayout& layout) const {
  if (has(layout, TuningCalls::persistent)) return TuningCalls::persistent;
  if (has(layout, TuningCalls::prepared)) return TuningCalls::prepared;
  return TuningCalls::blocking;
}

std::vector<const TuningEntry*> TuningTable::entries_at(const TuningNodeLayout& layout, TuningCalls calls) const {
  std::vector<const TuningEntry*> out;
  for (const auto& e : entries_)
    if (e.layout == layout && e.calls == calls) out.push_back(&e);
  return out;
}

// The class of a call among those with entries at `layout`: contiguous calls take the contiguous
// class (else the band of the largest blocks); fragmented calls the first band holding their mean
// block size (else the band of the largest blocks, else the contiguous class).
std::string TuningTable::class_of(const TuningNodeLayout& layout, const CallClass& call, TuningCalls calls) const {
  const TuningLayoutClass* contiguous = nullptr;
  std::vector<const TuningLayoutClass*> bands;
  for (const auto& c : classes_) {
    const bool used = std::any_of(entries_.begin(), entries_.end(), [&](const TuningEntry& e) {
      return e.layout == layout && e.layout_class == c.name && e.calls == calls;
    });
    if (!used) continue;
    if (c.contiguous) contiguous = contiguous ? contiguous : &c;
    else bands.push_back(&c);
  }
  // Unbounded last, then by bound.
  std::stable_sort(bands.begin(), bands.end(), [](const auto* a, const auto* b) {
    const auto key = [](const TuningLayoutClass* c) {
      return c->max_block_bytes < 0 ? INT64_MAX : c->max_block_bytes;
    };
    return key(a) < key(b);
  });
  if (call.contiguous && contiguous) return contiguous->name;
  if (!call.contiguous)
    for (const auto* b : bands)
      if (b->max_block_bytes < 0 || call.block_bytes <= b->max_block_bytes) return b->name;
  if (!bands.empty()) return bands.back()->name;
  return contiguous ? contiguous->name : std::string();
}

const TuningEntry* TuningTable::find(const TuningNodeLayout& layout, const CallClass& call, TuningCalls calls) const {
  const std::string klass = class_of(layout, call, calls);
  const TuningEntry* best = nullptr;
  for (const auto& e : entries_) {
    if (!(e.layout == layout) || e.layout_class != klass || e.calls != calls) continue;
    if (!best || distance(e, call.bytes_per_peer) < distance(*best, call.bytes_per_peer)) best = &e;
  }
  return best;
}

std::shared_ptr<const TuningTable> tuning_table(const std::string& path) {
  static std::mutex lock;
  static std::map<std::string, std::shared_ptr<const TuningTable>> tables;
  const std::lock_guard<std::mutex> guard(lock);
  auto& table = tables[path];
  if (!table) table = std::make_shared<const TuningTable>(TuningTable::read(path));
  return table;
}

}  // namespace tb
