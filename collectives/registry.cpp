#include "collectives/registry.hpp"

#include "collectives/settings.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace tb {
namespace {

struct Registry {
  std::vector<AlltoallwAlgorithmInfo> algorithms;
  std::vector<std::string> errors;  // duplicate names, reported on first use
  bool plugins_loaded = false;
};

// Constructed on first use: registrations run during static initialisation, in any order.
Registry& registry() {
  static Registry r;
  return r;
}

void load_plugins(Registry& r) {
  r.plugins_loaded = true;
  for (const std::string& path : settings().algorithm_plugins.get()) {
    const std::size_t before = r.algorithms.size(), errors_before = r.errors.size();
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      r.errors.push_back("TB_ALGORITHM_PLUGINS: cannot load '" + path + "': " + (why ? why : "unknown error"));
    } else if (r.algorithms.size() == before && r.errors.size() == errors_before) {
      // Not a plugin (e.g. some other library), or one already loaded: nothing it names can run.
      r.errors.push_back("TB_ALGORITHM_PLUGINS: '" + path + "' registered no algorithm");
    }
  }
  // Native first (the reference), then by name, whatever order the files were initialised in.
  std::sort(r.algorithms.begin(), r.algorithms.end(), [](const auto& a, const auto& b) {
    return (a.name != "native") == (b.name != "native") ? a.name < b.name : a.name == "native";
  });
}

const Registry& loaded_registry() {
  Registry& r = registry();
  if (!r.plugins_loaded) load_plugins(r);
  if (!r.errors.empty()) throw std::invalid_argument(r.errors.front());
  return r;
}

// Why this build has no algorithm of this name, for the algorithms whose sources the build
// leaves out (collectives/CMakeLists.txt); empty for any other name.
std::string_view left_out_of_this_build(std::string_view name) {
#if !defined(TB_HAVE_UCX)
  if (name.starts_with("ucx_"))
    return "it needs UCX, and this build was configured without it (no libucx-dev, TB_WITH_UCX=OFF, or the smpi "
           "build)";
#endif
  static_cast<void>(name);
  return {};
}

}  // namespace

AlltoallwRegistration::AlltoallwRegistration(const AlltoallwAlgorithmInfo& info) {
  Registry& r = registry();
  const bool taken =
      std::any_of(r.algorithms.begin(), r.algorithms.end(), [&](const auto& a) { return a.name == info.name; });
  if (taken) {
    r.errors.push_back("two Alltoallw algorithms are registered as '" + std::string(info.name) + "'");
    return;
  }
  r.algorithms.push_back(info);
}

std::span<const AlltoallwAlgorithmInfo> alltoallw_algorithms() { return loaded_registry().algorithms; }

const AlltoallwAlgorithmInfo* find_alltoallw(std::string_view name) {
  for (const auto& info : alltoallw_algorithms())
    if (info.name == name) return &info;
  return nullptr;
}

std::string default_alltoallw_name() {
  const std::string& chosen = settings().alltoallw.get();
  return chosen.empty() ? std::string("native") : chosen;
}

bool is_alltoallw_algorithm(std::string_view name) { return find_alltoallw(name) != nullptr; }

std::unique_ptr<AlltoallwAlgorithm> make_alltoallw(std::string_view name) {
  const std::string chosen = name.empty() ? default_alltoallw_name() : std::string(name);
  if (const auto* info = find_alltoallw(chosen)) return info->make();
  std::string known;
  for (const auto& info : alltoallw_algorithms()) known += (known.empty() ? "" : ", ") + std::string(info.name);
  const std::string origin = name.empty() ? " (from TB_ALLTOALLW)" : "";
  const std::string_view why = left_out_of_this_build(chosen);
  if (!why.empty())
    throw std::invalid_argument("Alltoallw algorithm '" + chosen + "'" + origin + " is not in this build: " +
                                std::string(why) + "; registered: " + known);
  throw std::invalid_argument("unknown Alltoallw algorithm '" + chosen + "'" + origin + "; registered: " + known);
}

std::string alltoallw_algorithm_list() {
  std::string text;
  for (const auto& info : alltoallw_algorithms()) {
    std::string name(info.name);
    name.resize(std::max<std::size_t>(name.size() + 2, 16), ' ');
    text += name + std::string(info.summary) + "\n";
  }
  return text;
}

}  // namespace tb
