// How much address space a metaspace reserves (docs/design.md, "Address space"): what its
// settings need, not 4 GiB per bookkeeping range. Measured as the growth of VmSize, under a real
// RLIMIT_AS (the test runs itself again in a child with the limit set), and by the error a
// refused reservation leaves: it names the range and the setting that sizes it.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "os/fault_injection.hpp"

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the shadow memory alone is terabytes of address space
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

constexpr size_t MiB = size_t{1} << 20;
constexpr size_t GiB = size_t{1} << 30;

size_t vm_size_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

ms_settings_t with_class_space(size_t bytes) {
  ms_settings_t s;
  ms_settings_init(&s);
  if (bytes != 0) s.class_space_bytes = bytes;
  return s;
}

// A metaspace in use: a loader with a block in each space (the first non-class node reserved).
::testing::AssertionResult use(ms_metaspace_t* ms) {
  if (ms == nullptr) return ::testing::AssertionFailure() << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  if (l == nullptr) return ::testing::AssertionFailure() << ms_last_error_text();
  if (ms_allocate(l, MS_SPACE_CLASS, 600) == nullptr ||
      ms_allocate(l, MS_SPACE_NONCLASS, 4000) == nullptr) {
    return ::testing::AssertionFailure() << ms_last_error_text();
  }
  if (ms_verify(ms) != MS_OK) return ::testing::AssertionFailure() << ms_last_error_text();
  return ::testing::AssertionSuccess();
}

// Runs this test again in a child whose address space is limited to `limit` bytes; true if the
// child's run passed. In the child (METASPACE_AS_CHILD set) returns false at once.
bool passes_under_limit(size_t limit, bool* in_child) {
  *in_child = std::getenv("METASPACE_AS_CHILD") != nullptr;
  if (*in_child) return false;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  pid_t child = fork();
  if (child == 0) {
    struct rlimit r {limit, limit};
    if (setrlimit(RLIMIT_AS, &r) != 0) _exit(3);
    setenv("METASPACE_AS_CHILD", "1", 1);
    char* argv[] = {const_cast<char*>("unit_tests"), filter.data(), nullptr};
    execv("/proc/self/exe", argv);
    _exit(4);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Every metaspace used to reserve two 4 GiB bookkeeping ranges and a 128 MiB node map: ~9.2 GiB
// with a 64 MiB class space, ~10 GiB with the defaults.
TEST(AddressSpace, AMetaspaceReservesWhatItsSettingsNeed) {
  struct Case {
    size_t class_space;
    size_t at_most;
  } cases[] = {{0, GiB + GiB / 2}, {64 * MiB, 256 * MiB}, {16 * MiB, 256 * MiB}};
  for (const Case& c : cases) {
    ms_settings_t s = with_class_space(c.class_space);
    size_t before = vm_size_bytes();
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_TRUE(use(ms));
    size_t grown = vm_size_bytes() - before;
    EXPECT_LE(grown, c.at_most) << "class space " << s.class_space_bytes;
    std::printf("class space %zu MiB: %zu MiB of address space\n", s.class_space_bytes / MiB,
                grown / MiB);
    ms_destroy(ms);
  }
}

TEST(AddressSpace, DefaultsFitUnderAnAddressSpaceLimitOf2GiB) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve terabytes of shadow memory";
  bool in_child = false;
  bool passed = passes_under_limit(2 * GiB, &in_child);
  if (!in_child) {
    EXPECT_TRUE(passed) << "ms_create with defaults under ulimit -v 2G";
    return;
  }
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_TRUE(use(ms));
  ms_destroy(ms);
}

TEST(AddressSpace, AThousandMetaspacesWith64MiBClassSpacesFitUnder300GiB) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve terabytes of shadow memory";
  bool in_child = false;
  bool passed = passes_under_limit(300 * GiB, &in_child);
  if (!in_child) {
    EXPECT_TRUE(passed) << "1 000 metaspaces of 64 MiB class space under ulimit -v 300G";
    return;
  }
  ms_settings_t s = with_class_space(64 * MiB);
  std::vector<ms_metaspace_t*> all;
  for (int i = 0; i < 1000; i++) {
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_TRUE(use(ms)) << "metaspace " << i;
    all.push_back(ms);
  }
  for (ms_metaspace_t* ms : all) ms_destroy(ms);
}

// Each reservation ms_create makes, refused in turn: the error says which range and which
// setting sizes it (it used to say only "cannot reserve 4294967296 bytes").
TEST(AddressSpace, AReserveErrorNamesTheRangeAndItsSetting) {
  using metaspace::os::FaultPoint;
  using metaspace::os::inject_fault;
  int refused = 0;
  for (uint64_t nth = 1; nth < 20; nth++) {
    inject_fault(FaultPoint::kReserve, nth);
    ms_metaspace_t* ms = ms_create(nullptr);
    inject_fault(FaultPoint::kReserve, 0);
    if (ms != nullptr) {
      ms_destroy(ms);
      break;
    }
    refused++;
    EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED) << ms_last_error_text();
    const char* text = ms_last_error_text();
    EXPECT_TRUE(std::strstr(text, "class_space_bytes") != nullptr ||
                std::strstr(text, "node_bytes") != nullptr ||
                std::strstr(text, "root chunk") != nullptr)
        << "reservation " << nth << ": " << text;
    EXPECT_NE(std::strstr(text, " for "), nullptr) << text;
  }
  EXPECT_GE(refused, 4);
}

}  // namespace
