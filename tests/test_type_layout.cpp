// Datatype flattening and the packer against MPI's own datatype engine: for random derived
// types, pack() must produce exactly MPI_Pack's byte stream and unpack() must leave exactly
// what MPI_Unpack leaves (gaps included); copy_typed() must match a Sendrecv to self.
#include "collectives/pack.hpp"
#include "collectives/type_layout.hpp"
#include "collectives/settings.hpp"
#include "mpi_test_support.hpp"
#include "random_types.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace tb {
namespace {

std::uint64_t seed_from_env() { return settings().conformance_seed.get(); }

void span_of(MPI_Datatype t, int count, MPI_Aint& lo, MPI_Aint& hi) {
  std::int64_t l = 0, h = 0;
  test::type_span(t, count, l, h);
  lo = l;
  hi = h;
}

TEST(TypeLayout, NamedPairTypesKeepTheirGap) {
  // {short, int}: a 2-byte hole between the members.
  const auto l = type_layout(MPI_SHORT_INT);
  ASSERT_EQ(l->blocks.size(), 2u);
  EXPECT_EQ(l->blocks[0].offset, 0);
  EXPECT_EQ(l->blocks[0].length, 2);
  EXPECT_EQ(l->blocks[1].offset, 4);
  EXPECT_EQ(l->blocks[1].length, 4);
  EXPECT_EQ(l->size, 6);
  EXPECT_EQ(l->extent, 8);
  // {double, int}: one 12-byte block, then 4 bytes of padding up to the extent.
  const auto d = type_layout(MPI_DOUBLE_INT);
  ASSERT_EQ(d->blocks.size(), 1u);
  EXPECT_EQ(d->blocks[0].length, 12);
  EXPECT_EQ(d->extent, 16);
  EXPECT_FALSE(d->dense());
  ASSERT_EQ(d->signature.size(), 2u);
  EXPECT_EQ(d->signature[0].type, MPI_DOUBLE);
  EXPECT_EQ(d->signature[1].type, MPI_INT);
  EXPECT_TRUE(type_layout(MPI_DOUBLE)->dense());
  EXPECT_THROW(type_layout(MPI_DATATYPE_NULL), std::invalid_argument);
}

TEST(TypeLayout, SubarrayBlocksAreRowsInCOrder) {
  // 4x6 ints, rows 1..2, columns 2..4: two runs of 3 ints.
  int sizes[] = {4, 6}, subsizes[] = {2, 3}, starts[] = {1, 2};
  MPI_Datatype t;
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t);
  MPI_Type_commit(&t);
  const auto l = type_layout(t);
  ASSERT_EQ(l->blocks.size(), 2u);
  EXPECT_EQ(l->blocks[0].offset, (1 * 6 + 2) * 4);
  EXPECT_EQ(l->blocks[0].length, 12);
  EXPECT_EQ(l->blocks[1].offset, (2 * 6 + 2) * 4);
  EXPECT_EQ(l->extent, 4 * 6 * 4);
  MPI_Type_free(&t);
}

TEST(TypeLayout, IsCachedOnTheDatatype) {
  MPI_Datatype t;
  MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  type_layout(t);
  const auto before = type_layout_decodings();
  for (int i = 0; i < 10; ++i) type_layout(t);
  EXPECT_EQ(type_layout_decodings(), before) << "repeated calls re-flattened the type";
  MPI_Type_free(&t);
}

TEST(TypeLayout, RandomTypesPackAndUnpackExactlyAsMpi) {
  const std::uint64_t seed = seed_from_env() + static_cast<std::uint64_t>(test::world_rank());
  const int cases = settings().conformance_cases.get() > 0 ? settings().conformance_cases.get() : 300;
  if (test::world_rank() == 0)
    std::printf("[ seed ] TB_CONFORMANCE_SEED=%llu (+ rank), %d cases\n", static_cast<unsigned long long>(seed_from_env()),
                cases);
  for (int c = 0; c < cases; ++c) {
    std::mt19937_64 pick(seed * 1000003u + static_cast<std::uint64_t>(c));
    const auto& units = test::unit_types();
    const MPI_Datatype unit = units[pick() % units.size()];
    test::TypeGenerator gen(pick(), unit, !test::is_open_mpi());
    std::int64_t n = 0;
    MPI_Datatype t = gen.any(&n);
    const int count = gen.uniform(0, 3);
    SCOPED_TRACE("seed " + std::to_string(seed) + " case " + std::to_string(c) + " (rank-local seed)");
    MPI_Aint lo, hi;
    span_of(t, count, lo, hi);
    const std::size_t margin = 64;
    const std::size_t bytes = static_cast<std::size_t>(hi - lo) + 2 * margin;
    std::vector<std::byte> src(bytes);
    for (auto& b : src) b = static_cast<std::byte>(gen.rng()());
    std::byte* origin = src.data() + margin - lo;

    int packed_size = 0;
    MPI_Pack_size(count, t, MPI_COMM_SELF, &packed_size);
    std::vector<std::byte> theirs(static_cast<std::size_t>(packed_size) + 1), ours;
    int position = 0;
    ASSERT_EQ(MPI_Pack(origin, count, t, theirs.data(), packed_size + 1, &position, MPI_COMM_SELF), MPI_SUCCESS);
    const auto layout = type_layout(t);
    ASSERT_EQ(layout->size * count, position);
    ours.resize(static_cast<std::size_t>(position));
    pack(origin, count, *layout, ours.data());
    // An empty pack leaves ours.data() null, which memcmp must not get even for 0 bytes (UBSan).
    EXPECT_TRUE(ours.empty() || std::memcmp(ours.data(), theirs.data(), ours.size()) == 0) << "pack differs from MPI_Pack";

    std::vector<std::byte> a(bytes, std::byte{0xC3}), b(bytes, std::byte{0xC3});
    int pos = 0;
    MPI_Unpack(theirs.data(), position, &pos, a.data() + margin - lo, count, t, MPI_COMM_SELF);
    unpack(ours.data(), count, *layout, b.data() + margin - lo);
    EXPECT_EQ(a, b) << "unpack differs from MPI_Unpack";

    // Signature: count x t holds n*count units, like a contiguous run of them.
    EXPECT_TRUE(same_signature(t, count, unit, n * count));
    if (n * count > 0) {
      EXPECT_FALSE(same_signature(t, count, unit, n * count + 1));
      EXPECT_FALSE(same_signature(t, count, unit == MPI_CHAR ? MPI_INT : MPI_CHAR, n * count));
    }

    // copy_typed into another random layout of the same units = Sendrecv to self.
    if (n * count > 0) {
      MPI_Datatype d = gen.exact(n * count);
      MPI_Aint dlo, dhi;
      span_of(d, 1, dlo, dhi);
      const std::size_t dbytes = static_cast<std::size_t>(dhi - dlo) + 2 * margin;
      std::vector<std::byte> x(dbytes, std::byte{0x3C}), y(dbytes, std::byte{0x3C});
      MPI_Sendrecv(origin, count, t, 0, 1, x.data() + margin - dlo, 1, d, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
      copy_typed(origin, count, *layout, y.data() + margin - dlo, 1, *type_layout(d));
      EXPECT_EQ(x, y) << "copy_typed differs from MPI_Sendrecv to self";
      test::free_type(d);
    }
    test::free_type(t);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace tb
