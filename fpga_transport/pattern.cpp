#include "fpga_transport/pattern.hpp"

#include "fpga_transport/link_models.hpp"
#include "redistribute/block_distribution.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

namespace tb::fpga {

CommPattern::CommPattern(int ranks) : ranks_(ranks), pairs_(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks)) {
  if (ranks < 1) throw std::invalid_argument("CommPattern: at least one rank");
}

std::int64_t CommPattern::total_bytes() const {
  std::int64_t t = 0;
  for (const auto& p : pairs_) t += p.bytes;
  return t;
}

nlohmann::json CommPattern::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (int s = 0; s < ranks_; ++s)
    for (int d = 0; d < ranks_; ++d) {
      const auto& p = at(s, d);
      if (p.bytes > 0) rows.push_back({s, d, p.bytes, p.send_blocks, p.recv_blocks});
    }
  return {{"ranks", ranks_}, {"description", description}, {"pairs", rows}};
}

std::vector<std::vector<int>> CommPattern::communicators_or_all() const {
  if (!communicators.empty()) return communicators;
  std::vector<int> all(static_cast<std::size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) all[static_cast<std::size_t>(r)] = r;
  return {all};
}

// Patterns are ranks x ranks tables: bounded so that a typo cannot ask for terabytes.
constexpr int kMaxPatternRanks = 4096;

CommPattern CommPattern::from_json(const nlohmann::json& j) {
  check_keys(j, "", {"ranks", "description", "pairs"});
  int ranks = 0;
  read_key(j, "", "ranks", ranks, /*required=*/true);
  if (ranks < 1 || ranks > kMaxPatternRanks)
    throw std::invalid_argument("pattern: ranks is " + std::to_string(ranks) + ", must lie in 1.." +
                                std::to_string(kMaxPatternRanks));
  CommPattern p(ranks);
  read_key(j, "", "description", p.description);
  std::vector<std::vector<std::int64_t>> rows;
  read_key(j, "", "pairs", rows, /*required=*/true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string where = "pattern: pairs[" + std::to_string(i) + "]";
    if (r.size() != 5) throw std::invalid_argument(where + ": expected [src, dst, bytes, send_blocks, recv_blocks]");
    if (r[0] < 0 || r[1] < 0 || r[0] >= p.ranks_ || r[1] >= p.ranks_)
      throw std::invalid_argument(where + ": pair " + std::to_string(r[0]) + "->" + std::to_string(r[1]) +
                                  " outside the " + std::to_string(p.ranks_) + " ranks");
    if (r[2] < 0 || r[3] < 0 || r[4] < 0)
      throw std::invalid_argument(where + ": bytes and block counts must be >= 0, got bytes " + std::to_string(r[2]) +
                                  ", blocks " + std::to_string(r[3]) + " and " + std::to_string(r[4]));
    p.at(static_cast<int>(r[0]), static_cast<int>(r[1])) = {r[2], r[3], r[4]};
  }
  return p;
}

namespace {

struct Layout {  // a pencil without MPI: which grid axis distributes each array axis (-1: whole)
  std::vector<int> grid_axis_of;
};

Layout default_layout(int ndim, int grid_ndims, int aligned) {
  Layout l{std::vector<int>(static_cast<std::size_t>(ndim), -1)};
  int next = 0;
  for (int k = 0; k < ndim && next < grid_ndims; ++k)
    if (k != aligned) l.grid_axis_of[k] = next++;
  return l;
}

// Local box of the rank at `coords`.
void local_box(const std::vector<std::int64_t>& shape, const Layout& l, const std::vector<int>& dims,
               const std::vector<int>& coords, std::vector<std::int64_t>& start, std::vector<std::int64_t>& size) {
  start.assign(shape.size(), 0);
  size = shape;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const int q = l.grid_axis_of[k];
    if (q < 0) continue;
    BlockDistribution b(shape[k], dims[q]);
    start[k] = b.start(coords[q]);
    size[k] = b.size(coords[q]);
  }
}

// Contiguous runs of the box [bstart, bstart+bsize) inside a C-order local array of `local`.
std::int64_t runs(const std::vector<std::int64_t>& local, const std::vector<std::int64_t>& bsize) {
  std::int64_t count = 1;
  for (auto s : bsize)
    if (s == 0) return 0;
  // trailing axes the box covers whole merge into the run, the first partial one ends it
  int k = static_cast<int>(local.size()) - 1;
  while (k >= 0 && bsize[k] == local[k]) --k;
  for (int a = 0; a < k; ++a) count *= bsize[a];
  return count;
}

// The rank count of `grid_dims`, after checking the redistribution's arguments.
int checked_ranks(const std::vector<std::int64_t>& shape, const std::vector<int>& grid_dims, int from_axis,
                  int to_axis) {
  const int d = static_cast<int>(shape.size());
  const int g = static_cast<int>(grid_dims.size());
  if (d < 2 || g < 1 || g > d - 1) throw std::invalid_argument("pattern: need d >= 2 and a grid of 1 to d-1 dimensions");
  if (from_axis < 0 || from_axis >= d || to_axis < 0 || to_axis >= d || from_axis == to_axis)
    throw std::invalid_argument("pattern: from and to axes must differ and lie in 0.." + std::to_string(d - 1));
  int ranks = 1;
  for (int n : grid_dims) {
    if (n < 1) throw std::invalid_argument("pattern: grid dimensions must be >= 1");
    if (n > kMaxPatternRanks / ranks)
      throw std::invalid_argument("pattern: the grid has more than " + std::to_string(kMaxPatternRanks) + " ranks");
    ranks *= n;
  }
  for (auto n : shape)
    if (n < 1) throw std::invalid_argument("pattern: every axis of the shape needs length 1 or more");
  return ranks;
}

// Rank r's coordinates on the grid (C order: the last grid axis varies fastest).
std::vector<int> grid_coords(int r, const std::vector<int>& grid_dims) {
  std::vector<int> c(grid_dims.size());
  for (int a = static_cast<int>(grid_dims.size()) - 1; a >= 0; --a) {
    c[a] = r % grid_dims[a];
    r /= grid_dims[a];
  }
  return c;
}

// Whether two ranks' coordinates differ at most in grid axis q (the redistribution's peers).
bool same_line(const std::vector<int>& a, const std::vector<int>& b, int q) {
  for (std::size_t k = 0; k < a.size(); ++k)
    if (static_cast<int>(k) != q && a[k] != b[k]) return false;
  return true;
}

// The sizes of the overlap of the boxes [s_in, s_in + n_in) and [s_out, s_out + n_out), per axis.
std::vector<std::int64_t> overlap(const std::vector<std::int64_t>& s_in, const std::vector<std::int64_t>& n_in,
                                  const std::vector<std::int64_t>& s_out, const std::vector<std::int64_t>& n_out) {
  std::vector<std::int64_t> size(s_in.size());
  for (std::size_t k = 0; k < size.size(); ++k) {
    const std::int64_t lo = std::max(s_in[k], s_out[k]);
    const std::int64_t hi = std::min(s_in[k] + n_in[k], s_out[k] + n_out[k]);
    size[k] = std::max<std::int64_t>(0, hi - lo);
  }
  return size;
}

// The sub-communicators: ranks that differ only in grid axis q, in rank order.
std::vector<std::vector<int>> grid_lines(int ranks, const std::vector<int>& grid_dims, int q) {
  std::map<std::vector<int>, std::vector<int>> lines;
  for (int r = 0; r < ranks; ++r) {
    auto key = grid_coords(r, grid_dims);
    key[q] = 0;
    lines[key].push_back(r);
  }
  std::vector<std::vector<int>> out;
  for (auto& [key, members] : lines) out.push_back(std::move(members));
  return out;
}

std::string joined(const auto& values) {
  std::string text;
  for (auto n : values) text += (text.empty() ? "" : "x") + std::to_string(n);
  return text;
}

}  // namespace

CommPattern redistribution_pattern(const std::vector<std::int64_t>& shape, const std::vector<int>& grid_dims,
                                   int from_axis, int to_axis, std::int64_t element_bytes) {
  const int ranks = checked_ranks(shape, grid_dims, from_axis, to_axis);
  const Layout in = default_layout(static_cast<int>(shape.size()), static_cast<int>(grid_dims.size()), from_axis);
  if (in.grid_axis_of[to_axis] < 0)
    throw std::invalid_argument("pattern: axis " + std::to_string(to_axis) + " is not distributed in the input pencil");
  Layout out = in;
  const int q = in.grid_axis_of[to_axis];
  out.grid_axis_of[to_axis] = -1;
  out.grid_axis_of[from_axis] = q;

  CommPattern p(ranks);
  std::vector<std::int64_t> s_in, n_in, s_out, n_out;
  for (int src = 0; src < ranks; ++src) {
    const auto cs = grid_coords(src, grid_dims);
    local_box(shape, in, grid_dims, cs, s_in, n_in);
    for (int dst = 0; dst < ranks; ++dst) {
      const auto cd = grid_coords(dst, grid_dims);
      if (!same_line(cs, cd, q)) continue;
      local_box(shape, out, grid_dims, cd, s_out, n_out);
      const auto box = overlap(s_in, n_in, s_out, n_out);
      std::int64_t elems = 1;
      for (auto n : box) elems *= n;
      if (elems == 0) continue;
      p.at(src, dst) = {elems * element_bytes, runs(n_in, box), runs(n_out, box)};
    }
  }
  p.communicators = grid_lines(ranks, grid_dims, q);
  p.description = "redistribution " + joined(shape) + " on grid " + joined(grid_dims) + ", axis " +
                  std::to_string(from_axis) + " -> " + std::to_string(to_axis) + ", " + std::to_string(element_bytes) +
                  " B elements";
  return p;
}

CommPattern recorded_pattern(const std::string& path, int call) {
  if (call < 0) throw std::invalid_argument("recorded pattern " + path + ": call " + std::to_string(call) + " is negative");
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("recorded pattern " + path + " cannot be read");
  std::string line;
  int index = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    if (index++ != call) continue;
    try {
      return CommPattern::from_json(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument("recorded pattern " + path + ", call " + std::to_string(call) + ": " + e.what());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("recorded pattern " + path + ", call " + std::to_string(call) + ": " + e.what());
    }
  }
  throw std::invalid_argument("recorded pattern " + path + " holds " + std::to_string(index) + " call(s); call " +
                              std::to_string(call) + " was asked for");
}

}  // namespace tb::fpga
