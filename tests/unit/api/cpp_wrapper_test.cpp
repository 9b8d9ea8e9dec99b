// The C++ wrapper: a Loader that outlives its Metaspace object keeps the metaspace alive (under
// ASan a use of freed memory would abort this test), every RAII type moves, and what cannot
// throw is noexcept.
#include <gtest/gtest.h>
#include <metaspace/metaspace.hpp>

#include <optional>
#include <type_traits>
#include <vector>

namespace {

static_assert(std::is_nothrow_move_constructible_v<ms::Metaspace>);
static_assert(std::is_nothrow_move_assignable_v<ms::Metaspace>);
static_assert(std::is_nothrow_move_constructible_v<ms::Loader>);
static_assert(std::is_nothrow_move_assignable_v<ms::Loader>);
static_assert(std::is_nothrow_copy_constructible_v<ms::Settings>);
static_assert(!std::is_copy_constructible_v<ms::Metaspace>);
static_assert(!std::is_copy_constructible_v<ms::Loader>);
static_assert(noexcept(std::declval<ms::Loader&>().allocate(MS_SPACE_NONCLASS, 8)));
static_assert(noexcept(std::declval<ms::Loader&>().deallocate(nullptr, 8)));
static_assert(noexcept(std::declval<ms::Metaspace&>().purge()));
static_assert(noexcept(ms_allocate(nullptr, MS_SPACE_NONCLASS, 8)));
static_assert(noexcept(ms_create(nullptr)));

TEST(CppWrapper, LoaderOutlivesItsMetaspaceObject) {
  std::optional<ms::Metaspace> space(std::in_place, ms::Settings().count_allocations(true));
  ms::Loader a = space->create_loader(MS_LOADER_STANDARD);
  ms::Loader b = space->create_loader(MS_LOADER_MICRO);
  ASSERT_NE(a.allocate(MS_SPACE_NONCLASS, 64), nullptr);
  space.reset();  // the Metaspace object is gone; the C metaspace is not
  void* p = a.allocate(MS_SPACE_CLASS, 600);
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  EXPECT_EQ(a.deallocate(p, 600), MS_OK);
  EXPECT_EQ(a.stats().allocations, 2u);
  EXPECT_EQ(a.stats().allocations_counted, 1);
  a.reset();
  EXPECT_NE(b.allocate(MS_SPACE_NONCLASS, 8), nullptr);
  // b's destructor destroys the last loader and then the metaspace.
}

TEST(CppWrapper, MetaspaceAndLoaderMove) {
  ms::Metaspace first(ms::Settings().options("granule=16k"));
  ms_metaspace_t* raw = first.get();
  ms::Metaspace second(std::move(first));
  EXPECT_FALSE(first);
  EXPECT_EQ(second.get(), raw);
  ms::Metaspace third;
  third = std::move(second);  // the default metaspace third had is destroyed here
  EXPECT_EQ(third.get(), raw);
  EXPECT_EQ(third.stats().commit_granule_bytes, 16u << 10);

  std::vector<ms::Loader> loaders;
  for (int i = 0; i < 10; i++) loaders.push_back(third.create_loader(MS_LOADER_STANDARD));
  ms::Loader moved = std::move(loaders[3]);
  EXPECT_FALSE(loaders[3]);
  EXPECT_NE(moved.allocate(MS_SPACE_NONCLASS, 16), nullptr);
  loaders[3] = std::move(moved);
  EXPECT_EQ(third.stats().loaders, 10u);
  loaders.clear();
  EXPECT_EQ(third.stats().loaders, 0u);
  third.verify();
}

TEST(CppWrapper, ErrorsAreExceptionsWhereConstructionFails) {
  try {
    ms::Settings().options("granularity=16k");
    FAIL() << "unknown key accepted";
  } catch (const ms::Error& e) {
    EXPECT_EQ(e.code(), MS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("granularity"), std::string::npos);
  }
  EXPECT_THROW(ms::Metaspace(ms::Settings().root_chunk(3)), ms::Error);
  ms::Metaspace space;
  EXPECT_THROW(space.create_loader(static_cast<ms_loader_kind_t>(7)), ms::Error);
  EXPECT_NE(space.report_json().find("\"schema\""), std::string::npos);
  EXPECT_NE(space.report_text().find("Total usage"), std::string::npos);
}

}  // namespace
