#include "collectives/type_layout.hpp"

#include "collectives/mpi_error.hpp"

#include <atomic>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>

namespace tb {
namespace {

std::int64_t g_decodings = 0;

void append_block(std::vector<ByteBlock>& out, std::int64_t offset, std::int64_t length) {
  if (length == 0) return;
  if (!out.empty() && out.back().offset + out.back().length == offset) {
    out.back().length += length;
    return;
  }
  out.push_back({offset, length});
}

void append_run(std::vector<BasicRun>& out, MPI_Datatype type, std::int64_t count) {
  if (count == 0) return;
  if (!out.empty() && out.back().type == type) {
    out.back().count += count;
    return;
  }
  out.push_back({type, count});
}

// Appends `n` copies of `child` at base + i * stride (bytes).
void append_copies(TypeLayout& out, const TypeLayout& child, std::int64_t n, std::int64_t stride, std::int64_t base) {
  if (n <= 0 || child.size == 0) return;
  if (child.dense() && stride == child.extent) {
    append_block(out.blocks, base, n * child.extent);
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      for (const ByteBlock& b : child.blocks) append_block(out.blocks, base + i * stride + b.offset, b.length);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    if (child.signature.size() == 1) {  // the common case: one basic type, merge in one step
      append_run(out.signature, child.signature[0].type, n * child.signature[0].count);
      break;
    }
    for (const BasicRun& r : child.signature) append_run(out.signature, r.type, r.count);
  }
  out.size += n * child.size;
}

// The named pair types of MPI_MINLOC/MAXLOC have a gap between their two members: their layout
// is that of the matching C struct.
template <class A, class B>
bool pair_layout(TypeLayout& out, MPI_Datatype a, MPI_Datatype b) {
  struct Pair {
    A first;
    B second;
  };
  append_block(out.blocks, offsetof(Pair, first), sizeof(A));
  append_block(out.blocks, offsetof(Pair, second), sizeof(B));
  append_run(out.signature, a, 1);
  append_run(out.signature, b, 1);
  out.size = sizeof(A) + sizeof(B);
  return true;
}

bool named_pair(MPI_Datatype t, TypeLayout& out) {
  if (t == MPI_FLOAT_INT) return pair_layout<float, int>(out, MPI_FLOAT, MPI_INT);
  if (t == MPI_DOUBLE_INT) return pair_layout<double, int>(out, MPI_DOUBLE, MPI_INT);
  if (t == MPI_LONG_INT) return pair_layout<long, int>(out, MPI_LONG, MPI_INT);
  if (t == MPI_2INT) return pair_layout<int, int>(out, MPI_INT, MPI_INT);
  if (t == MPI_SHORT_INT) return pair_layout<short, int>(out, MPI_SHORT, MPI_INT);
  if (t == MPI_LONG_DOUBLE_INT) return pair_layout<long double, int>(out, MPI_LONG_DOUBLE, MPI_INT);
  return false;
}

// The contents of a derived type; frees the derived types it returns.
struct Contents {
  int combiner = 0;
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;
  explicit Contents(MPI_Datatype t) {
    int ni = 0, na = 0, nt = 0;
    TB_MPI_CHECK(PMPI_Type_get_envelope(t, &ni, &na, &nt, &combiner));
    if (combiner == MPI_COMBINER_NAMED) return;
#if defined(TB_SMPI)
    // SimGrid SMPI 3.32 labels the contents of every struct type (its resized and subarray types
    // are structs too) MPI_COMBINER_INDEXED, with the struct's arguments. A true indexed type
    // has no addresses.
    if (combiner == MPI_COMBINER_INDEXED && na > 0) combiner = MPI_COMBINER_STRUCT;
#endif
    ints.resize(static_cast<std::size_t>(ni));
    addrs.resize(static_cast<std::size_t>(na));
    types.resize(static_cast<std::size_t>(nt));
    TB_MPI_CHECK(PMPI_Type_get_contents(t, ni, na, nt, ints.data(), addrs.data(), types.data()));
  }
  ~Contents() {
    for (MPI_Datatype& t : types) {
      int a, b, c, comb = 0;
      if (PMPI_Type_get_envelope(t, &a, &b, &c, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED) PMPI_Type_free(&t);
    }
  }
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;
};

// Indices along one axis of a darray owned by process coordinate c of p (MPI's definition).
std::vector<std::int64_t> darray_indices(int g, int distrib, int darg, int p, int c) {
  std::vector<std::int64_t> idx;
  if (distrib == MPI_DISTRIBUTE_NONE) {
    for (int i = 0; i < g; ++i) idx.push_back(i);
  } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
    const std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
    for (std::int64_t i = c * b; i < std::min<std::int64_t>((c + 1) * b, g); ++i) idx.push_back(i);
  } else {  // MPI_DISTRIBUTE_CYCLIC
    const std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    for (std::int64_t s = c * b; s < g; s += static_cast<std::int64_t>(p) * b)
      for (std::int64_t i = s; i < std::min<std::int64_t>(s + b, g); ++i) idx.push_back(i);
  }
  return idx;
}

// Appends the elements of an n-d array selection, in type-map order: `order` C (last axis
// fastest) or Fortran (first axis fastest); indices[k] lists the selected indices of axis k.
void append_selection(TypeLayout& out, const TypeLayout& element, std::int64_t element_extent,
                      const std::vector<int>& sizes, const std::vector<std::vector<std::int64_t>>& indices, int order) {
  const int n = static_cast<int>(sizes.size());
  std::vector<int> axes(static_cast<std::size_t>(n));  // slowest first
  for (int k = 0; k < n; ++k) axes[k] = order == MPI_ORDER_C ? k : n - 1 - k;
  std::vector<std::int64_t> stride(static_cast<std::size_t>(n));  // in elements
  std::int64_t s = 1;
  for (int i = n - 1; i >= 0; --i) {
    stride[axes[i]] = s;
    s *= sizes[axes[i]];
  }
  for (const auto& idx : indices)
    if (idx.empty()) return;
  const int fast = axes[n - 1];
  std::vector<std::size_t> pos(static_cast<std::size_t>(n), 0);
  while (true) {
    std::int64_t base = 0;
    for (int i = 0; i < n - 1; ++i) base += indices[axes[i]][pos[axes[i]]] * stride[axes[i]];
    // Along the fastest axis, consecutive indices form runs of whole elements.
    const auto& f = indices[fast];
    for (std::size_t j = 0; j < f.size();) {
      std::size_t e = j + 1;
      while (e < f.size() && f[e] == f[e - 1] + 1) ++e;
      append_copies(out, element, static_cast<std::int64_t>(e - j), element_extent, (base + f[j]) * element_extent);
      j = e;
    }
    int i = n - 2;
    for (; i >= 0; --i) {
      if (++pos[axes[i]] < indices[axes[i]].size()) break;
      pos[axes[i]] = 0;
    }
    if (i < 0) return;
  }
}

std::shared_ptr<const TypeLayout> decode(MPI_Datatype t);

// MPI_Type_create_subarray(ndims, sizes, subsizes, starts, order, oldtype).
void append_subarray(TypeLayout& out, const Contents& c) {
  const auto& ints = c.ints;
  const int dims = ints[0];
  std::vector<int> sizes(ints.begin() + 1, ints.begin() + 1 + dims);
  std::vector<std::vector<std::int64_t>> indices(static_cast<std::size_t>(dims));
  for (int k = 0; k < dims; ++k)
    for (int j = 0; j < ints[1 + dims + k]; ++j) indices[k].push_back(ints[1 + 2 * dims + k] + j);
  const auto element = type_layout(c.types.at(0));
  append_selection(out, *element, element->extent, sizes, indices, ints[1 + 3 * dims]);
}

// MPI_Type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, oldtype).
void append_darray(TypeLayout& out, const Contents& c) {
  const auto& ints = c.ints;
  const int rank = ints[1], dims = ints[2];
  std::vector<int> gsizes(ints.begin() + 3, ints.begin() + 3 + dims);
  const int* distribs = &ints[3 + dims];
  const int* dargs = &ints[3 + 2 * dims];
  const int* psizes = &ints[3 + 3 * dims];
  const int order = ints[3 + 4 * dims];
  // Process coordinates: the process grid is row-major whatever the array order.
  std::vector<int> coord(static_cast<std::size_t>(dims));
  for (int k = dims - 1, r = rank; k >= 0; --k) {
    coord[k] = r % psizes[k];
    r /= psizes[k];
  }
  std::vector<std::vector<std::int64_t>> indices;
  for (int k = 0; k < dims; ++k)
    indices.push_back(darray_indices(gsizes[k], distribs[k], dargs[k], psizes[k], coord[k]));
  const auto element = type_layout(c.types.at(0));
  append_selection(out, *element, element->extent, gsizes, indices, order);
}

// Indexed families: block i of ints[1 + i] (or one shared block length) elements at a
// displacement in elements (ints) or bytes (addrs).
void append_indexed(TypeLayout& out, const Contents& c) {
  const auto& ints = c.ints;
  const auto element = type_layout(c.types.at(0));
  const int blocks = ints[0];
  const bool one_length = c.combiner == MPI_COMBINER_INDEXED_BLOCK || c.combiner == MPI_COMBINER_HINDEXED_BLOCK;
  const bool in_elements = c.combiner == MPI_COMBINER_INDEXED || c.combiner == MPI_COMBINER_INDEXED_BLOCK;
  for (int i = 0; i < blocks; ++i) {
    const int length = one_length ? ints[1] : ints[1 + i];
    const int displacement_at = one_length ? 2 + i : 1 + blocks + i;
    const std::int64_t displacement = in_elements ? ints[displacement_at] * element->extent : c.addrs[i];
    append_copies(out, *element, length, element->extent, displacement);
  }
}

TypeLayout decode_derived(const Contents& c) {
  TypeLayout out;
  const auto& ints = c.ints;
  switch (c.combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
      out = *type_layout(c.types.at(0));
      break;
    case MPI_COMBINER_CONTIGUOUS: {
      const auto element = type_layout(c.types.at(0));
      append_copies(out, *element, ints[0], element->extent, 0);
      break;
    }
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
      const auto element = type_layout(c.types.at(0));
      const std::int64_t stride = c.combiner == MPI_COMBINER_VECTOR ? ints[2] * element->extent : c.addrs[0];
      for (int i = 0; i < ints[0]; ++i) append_copies(out, *element, ints[1], element->extent, i * stride);
      break;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
      append_indexed(out, c);
      break;
    case MPI_COMBINER_STRUCT:
      for (int i = 0; i < ints[0]; ++i) {
        const auto member = type_layout(c.types.at(static_cast<std::size_t>(i)));
        append_copies(out, *member, ints[1 + i], member->extent, c.addrs[i]);
      }
      break;
    case MPI_COMBINER_SUBARRAY:
      append_subarray(out, c);
      break;
    case MPI_COMBINER_DARRAY:
      append_darray(out, c);
      break;
    default:
      throw std::invalid_argument("type_layout: datatype combiner " + std::to_string(c.combiner) +
                                  " (Fortran F90 or deprecated *_INTEGER) is not supported");
  }
  return out;
}

std::shared_ptr<const TypeLayout> decode(MPI_Datatype t) {
  ++g_decodings;
  auto layout = std::make_shared<TypeLayout>();
  Contents contents(t);
  if (contents.combiner == MPI_COMBINER_NAMED) {
    if (!named_pair(t, *layout)) {
      int size = 0;
      TB_MPI_CHECK(PMPI_Type_size(t, &size));
      append_block(layout->blocks, 0, size);
      append_run(layout->signature, t, 1);
      layout->size = size;
    }
  } else {
    *layout = decode_derived(contents);
  }
  MPI_Aint lb = 0, extent = 0;
  TB_MPI_CHECK(PMPI_Type_get_extent(t, &lb, &extent));
#if defined(TB_SMPI)
  // SimGrid 3.32 makes an indexed, struct or 1-D subarray type whose blocks form one run a
  // contiguous type of a predefined element with the run's start as its lower bound, which its
  // MPI_Type_get_contents leaves out; a contiguous type of a predefined element made by
  // MPI_Type_contiguous has a lower bound of 0. So such a run starts at the lower bound.
  if (contents.combiner == MPI_COMBINER_CONTIGUOUS && lb != 0 &&
      Contents(contents.types.at(0)).combiner == MPI_COMBINER_NAMED)
    for (ByteBlock& block : layout->blocks) block.offset += lb;
#endif
  layout->lb = lb;
  layout->extent = extent;
  return layout;
}

// --- the cache: an attribute on each derived datatype -------------------------------------------
using CacheEntry = std::shared_ptr<const TypeLayout>;
int g_keyval = MPI_KEYVAL_INVALID;
std::atomic<std::uint64_t> g_dropped{0};

int delete_entry(MPI_Datatype, int, void* value, void*) {
  delete static_cast<CacheEntry*>(value);
  g_dropped.fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int free_keyval_at_finalize(MPI_Comm, int, void*, void*) {
  if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Type_free_keyval(&g_keyval);
  return MPI_SUCCESS;
}

int keyval() {
  if (g_keyval == MPI_KEYVAL_INVALID) {
    TB_MPI_CHECK(PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_entry, &g_keyval, nullptr));
    // MPI_Finalize deletes MPI_COMM_SELF's attributes first: free the keyval then.
    int finalize_key = MPI_KEYVAL_INVALID;
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_keyval_at_finalize, &finalize_key, nullptr));
    TB_MPI_CHECK(PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_key, nullptr));
    TB_MPI_CHECK(PMPI_Comm_free_keyval(&finalize_key));
  }
  return g_keyval;
}

}  // namespace

std::shared_ptr<const TypeLayout> type_layout(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) throw std::invalid_argument("type_layout: MPI_DATATYPE_NULL");
  int ni, na, nt, combiner = 0;
  TB_MPI_CHECK(PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner));
  if (combiner == MPI_COMBINER_NAMED) {  // predefined types carry no attributes: keep them here
    static std::map<MPI_Datatype, std::shared_ptr<const TypeLayout>> named;
    auto& entry = named[type];
    if (!entry) entry = decode(type);
    return entry;
  }
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Type_get_attr(type, keyval(), &value, &found));
  if (found) return *static_cast<CacheEntry*>(value);
  auto entry = new CacheEntry(decode(type));
  const int rc = PMPI_Type_set_attr(type, keyval(), entry);
  if (rc != MPI_SUCCESS) {
    CacheEntry result = *entry;
    delete entry;
    g_dropped.fetch_add(1, std::memory_order_relaxed);  // not cached: handle memos must not trust it
    return result;
  }
  return *entry;
}

std::uint64_t type_layouts_dropped() { return g_dropped.load(std::memory_order_relaxed); }

std::vector<BasicRun> type_signature(MPI_Datatype type, std::int64_t count) {
  const auto layout = type_layout(type);
  std::vector<BasicRun> out;
  for (std::int64_t i = 0; i < count; ++i) {
    if (layout->signature.size() == 1) {
      append_run(out, layout->signature[0].type, count * layout->signature[0].count);
      break;
    }
    for (const BasicRun& r : layout->signature) append_run(out, r.type, r.count);
  }
  return out;
}

bool same_signature(MPI_Datatype a, std::int64_t count_a, MPI_Datatype b, std::int64_t count_b) {
  const auto sa = type_signature(a, count_a);
  const auto sb = type_signature(b, count_b);
  if (sa.size() != sb.size()) return false;
  for (std::size_t i = 0; i < sa.size(); ++i)
    if (sa[i].type != sb[i].type || sa[i].count != sb[i].count) return false;
  return true;
}

std::int64_t type_layout_decodings() { return g_decodings; }

}  // namespace tb
