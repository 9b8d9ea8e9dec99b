#include "fuzz/fuzz_driver.hpp"

#include <metaspace/metaspace.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <thread>
#include <vector>

#include "arena/fence.hpp"
#include "instance/metaspace.hpp"
#include "loader/shared_windows.hpp"
#include "os/fault_injection.hpp"
#include "support/accounting.hpp"
#include "support/observer_calls.hpp"

extern "C" {
void* msfuzz_allocate_raw(ms_loader_t* loader, int space, size_t bytes);
ms_loader_t* msfuzz_loader_create_raw(ms_metaspace_t* ms, int kind, unsigned flags);
ms_metaspace_t* msfuzz_create_raw(const ms_settings_t* settings, int reclaim);
}

namespace metaspace::fuzz {

namespace {

// The library's own figures: checked mode's fence behind every block, and the number of later
// deaths after which a dead handle is forgotten (it may then name a live loader again).
constexpr size_t kFenceBytes = Fence::kBytes;
constexpr uint64_t kDeadHandlesRemembered = LoaderRegistry::kDeadHandlesRemembered;
constexpr size_t kMaxOperations = 1500;
constexpr size_t kMaxLoaders = 48;
constexpr size_t kMaxBlocksPerLoader = 4096;
constexpr size_t kMaxFreedRemembered = 64;

[[noreturn]] void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "api fuzzer: ");
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n  last error: %s: %s\n", ms_error_name(ms_last_error()),
               ms_last_error_text());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, ...)       \
  do {                              \
    if (!(cond)) die(__VA_ARGS__);  \
  } while (0)

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return n_ == 0; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    n_--;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }

 private:
  const uint8_t* p_;
  size_t n_;
};

struct Block {
  char* p;
  size_t bytes;    // requested
  size_t rounded;  // what the statistics count as used
  uint8_t pattern;
};

struct Loader {
  ms_loader_t* handle;
  ms_loader_kind_t kind;
  std::vector<Block> live;
  std::vector<Block> freed;  // checked mode only: candidates for double frees
  size_t used = 0;
  bool shared = false;  // MS_LOADER_SHARED: the rest of its thread's window counts as used
};

struct GcEvents {
  ms_metaspace_t* ms = nullptr;
  uint64_t calls = 0;
  // Armed by an allocation: the callback, if that allocation calls it, destroys the loader that
  // is allocating (a runtime unloading a loader still in use) and creates another, which takes
  // the dead loader's object at once. The allocation must then fail with MS_ERR_DESTROYED.
  ms_loader_t* unload = nullptr;
  bool unloaded = false;
  ms_error_t unload_result = MS_OK;
  ms_loader_t* replacement = nullptr;
};

// The GC callback of a side metaspace (op_side_metaspace): it destroys the metaspace it is told
// about, from within the call that delivered it, and may create another there.
struct SideEvents {
  int calls = 0;
  bool create_another = false;
  ms_metaspace_t* created = nullptr;
};

void side_gc_callback(ms_metaspace_t* ms, size_t, void* user) {
  auto* events = static_cast<SideEvents*>(user);
  events->calls++;
  ms_destroy(ms);
  if (events->create_another && events->created == nullptr) {
    ms_settings_t s;
    ms_settings_init(&s);
    s.class_space_bytes = 16u << 20;
    events->created = ms_create(&s);
  }
}

void gc_callback(ms_metaspace_t* ms, size_t committed, void* user) {
  auto* events = static_cast<GcEvents*>(user);
  FUZZ_CHECK(ms == events->ms, "gc callback for metaspace %p, expected %p", (void*)ms,
             (void*)events->ms);
  (void)committed;
  events->calls++;
  // The callback runs outside every library lock: calling back in must work.
  ms_stats_t st;
  FUZZ_CHECK(ms_get_stats(ms, &st) == MS_OK, "ms_get_stats from the gc callback");
  if (events->unload != nullptr) {
    events->unload_result = ms_loader_destroy(events->unload);
    events->unload = nullptr;
    events->unloaded = true;
    events->replacement = ms_loader_create(ms, MS_LOADER_STANDARD, 0);  // may be refused
  }
}

class Session {
 public:
  explicit Session(Input& in) : in_(in) {}

  RunStats run() {
    if (!create()) return stats_;
    while (!in_.done() && stats_.operations < kMaxOperations) {
      step();
      stats_.operations++;
      check_all("after operation");
    }
    finish();
    return stats_;
  }

 private:
  // ---- setup and teardown ----

  bool create() {
    uint8_t b0 = in_.u8(), b1 = in_.u8(), b2 = in_.u8(), b3 = in_.u8(), b4 = in_.u8();
    ms_settings_t s;
    ms_settings_init(&s);
    checked_ = (b0 & 1) != 0;
    s.checked = checked_ ? 1 : 0;
    int reclaim = (b0 >> 1) & 3;
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    static const size_t kRoots[4] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
    s.root_chunk_bytes = kRoots[b1 & 3];
    s.node_bytes = s.root_chunk_bytes * (1 + ((b1 >> 2) & 3));
    s.class_space_bytes = s.root_chunk_bytes * (2 + ((b1 >> 4) & 3));
    s.class_alignment_bytes = size_t{8} << ((b0 >> 3) & 7);
    if ((b2 & 7) != 0) {
      s.commit_granule_bytes = std::min(page << ((b2 & 7) - 1), std::min(s.root_chunk_bytes,
                                                                         size_t{1} << 20));
    } else {
      s.commit_granule_bytes = page;  // the policies' defaults may exceed a small root chunk
    }
    switch (b0 >> 6) {
      case 1: s.max_committed_bytes = s.commit_granule_bytes * (1 + b3); break;
      case 2: s.max_committed_bytes = (size_t{256} << 10) << (b3 & 7); break;
      default: s.max_committed_bytes = 0; break;
    }
    if (b4 != 0) {
      s.gc_threshold_bytes = s.commit_granule_bytes * b4 * 4;
      s.gc_callback = gc_callback;
      s.gc_callback_user = &gc_;
    }
    destroy_loaders_first_ = (b2 & 0x80) != 0;
    if (reclaim == 3) {
      // A reclaim policy that does not exist: refused, nothing created.
      ms_metaspace_t* bad = msfuzz_create_raw(&s, 3 + b2);
      FUZZ_CHECK(bad == nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                 "ms_create with reclaim policy %d", 3 + b2);
      stats_.bad_calls++;
      reclaim = MS_RECLAIM_BALANCED;
    }
    s.reclaim = static_cast<ms_reclaim_t>(reclaim);
    settings_ = s;
    ms_ = ms_create(&s);
    FUZZ_CHECK(ms_ != nullptr, "ms_create failed for valid settings");
    gc_.ms = ms_;
    check_all("after create");
    return true;
  }

  void finish() {
    for (int p = 0; p < os::kFaultPoints; p++) os::inject_fault(static_cast<os::FaultPoint>(p), 0);
    if (destroy_loaders_first_) {
      while (!loaders_.empty()) destroy_loader(loaders_.size() - 1, MS_OK);
      ms_purge(ms_);
      check_all("after destroying all loaders");
      ms_stats_t st;
      FUZZ_CHECK(ms_get_stats(ms_, &st) == MS_OK, "stats");
      FUZZ_CHECK(st.total.used_bytes == 0 && st.total.free_blocks_bytes == 0 &&
                     st.total.free_in_chunks_bytes == 0 && st.total.fence_bytes == 0,
                 "no loaders, yet used %zu, free blocks %zu, free in chunks %zu, fences %zu",
                 st.total.used_bytes, st.total.free_blocks_bytes, st.total.free_in_chunks_bytes,
                 st.total.fence_bytes);
      if (settings_.reclaim != MS_RECLAIM_NONE) {
        // Only bookkeeping (remembered dead handles, spare chunk headers) stays.
        FUZZ_CHECK(st.total.committed_bytes == st.total.overhead_bytes,
                   "all loaders destroyed and purged, %zu bytes still committed",
                   st.total.committed_bytes);
      }
    }
    ms_destroy(ms_);
    ms_ = nullptr;
  }

  // ---- checks ----

  void check_all(const char* when) {
    ms_error_t e = ms_verify(ms_);
    FUZZ_CHECK(e == MS_OK, "ms_verify %s (operation %llu): %s", when,
               (unsigned long long)stats_.operations, ms_error_name(e));
    ms_stats_t st;
    FUZZ_CHECK(ms_get_stats(ms_, &st) == MS_OK, "ms_get_stats");
    const ms_space_stats_t* spaces[3] = {&st.space[0], &st.space[1], &st.total};
    for (const ms_space_stats_t* sp : spaces) {
      FUZZ_CHECK(sp->committed_bytes == metaspace::test::accounted_bytes(*sp),
                 "committed %zu != used %zu + free in chunks %zu + free chunks %zu + free "
                 "blocks %zu + fences %zu + overhead %zu", sp->committed_bytes, sp->used_bytes,
                 sp->free_in_chunks_bytes, sp->free_chunks_bytes, sp->free_blocks_bytes,
                 sp->fence_bytes, sp->overhead_bytes);
      FUZZ_CHECK(sp->free_blocks_bytes ==
                     sp->deallocated_bytes + sp->salvaged_bytes + sp->alignment_gap_bytes,
                 "free blocks %zu != deallocated + salvaged + gaps", sp->free_blocks_bytes);
      // Bookkeeping lies in its own reservation, not in reserved_bytes.
      FUZZ_CHECK(sp->committed_bytes - sp->overhead_bytes <= sp->reserved_bytes,
                 "committed %zu (overhead %zu) > reserved %zu", sp->committed_bytes,
                 sp->overhead_bytes, sp->reserved_bytes);
    }
    // Exact, but for shared loaders: the unused rest of a thread's open window counts as used
    // (metaspace.h); this driver is one thread, so each has at most one window.
    size_t window_slack = 0;
    for (const Loader& l : loaders_) window_slack += l.shared ? SharedWindows::kMaxOpenBytesPerThread : 0;
    FUZZ_CHECK(st.total.used_bytes >= model_used_ &&
                   st.total.used_bytes - model_used_ <= window_slack,
               "statistics say %zu bytes used, model %zu (+ at most %zu in shared windows)",
               st.total.used_bytes, model_used_, window_slack);
    FUZZ_CHECK(st.loaders == loaders_.size(), "statistics count %zu loaders, model %zu",
               st.loaders, loaders_.size());
    if (!checked_) {
      FUZZ_CHECK(st.total.fence_bytes == 0, "fences outside checked mode");
    }
    if (settings_.max_committed_bytes != 0) {
      // The cap is on chunk memory; bookkeeping is not capped.
      FUZZ_CHECK(st.total.committed_bytes - st.total.overhead_bytes <=
                     settings_.max_committed_bytes,
                 "committed %zu above the cap %zu", st.total.committed_bytes,
                 settings_.max_committed_bytes);
    }
  }

  void expect_error(ms_error_t got, std::initializer_list<ms_error_t> allowed, const char* what) {
    for (ms_error_t a : allowed) {
      if (got == a) {
        FUZZ_CHECK(got == MS_OK || ms_last_error() == got,
                   "%s returned %s but the last error is %s", what, ms_error_name(got),
                   ms_error_name(ms_last_error()));
        return;
      }
    }
    die("%s: unexpected result %s", what, ms_error_name(got));
  }

  // Small blocks are filled; large ones only where check_pattern looks (touching megabytes per
  // allocation would make the fuzzer measure page faults).
  static void fill_pattern(const Block& b) {
    if (b.bytes <= 512) {
      std::memset(b.p, b.pattern, b.bytes);
      return;
    }
    std::memset(b.p, b.pattern, 64);
    std::memset(b.p + b.bytes - 64, b.pattern, 64);
    for (size_t k = 1; k < 32; k++) b.p[b.bytes / 32 * k] = static_cast<char>(b.pattern);
  }

  static void check_pattern(const Block& b, const char* what) {
    auto at = [&](size_t i) {
      FUZZ_CHECK(static_cast<uint8_t>(b.p[i]) == b.pattern,
                 "%s: block %p (%zu bytes) byte %zu is %#x, written %#x", what, (void*)b.p,
                 b.bytes, i, static_cast<uint8_t>(b.p[i]), b.pattern);
    };
    if (b.bytes <= 512) {
      for (size_t i = 0; i < b.bytes; i++) at(i);
    } else {
      for (size_t i = 0; i < 64; i++) at(i);
      for (size_t i = b.bytes - 64; i < b.bytes; i++) at(i);
      for (size_t k = 1; k < 32; k++) at(b.bytes / 32 * k);
    }
  }

  // ---- the model ----

  void add_span(char* p, size_t bytes) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
    auto next = spans_.lower_bound(lo);
    FUZZ_CHECK(next == spans_.end() || next->first >= hi,
               "block [%#zx, %#zx) overlaps a live block at %#zx", (size_t)lo, (size_t)hi,
               next == spans_.end() ? size_t{0} : (size_t)next->first);
    if (next != spans_.begin()) {
      auto prev = std::prev(next);
      FUZZ_CHECK(prev->second <= lo, "block [%#zx, %#zx) overlaps a live block [%#zx, %#zx)",
                 (size_t)lo, (size_t)hi, (size_t)prev->first, (size_t)prev->second);
    }
    spans_[lo] = hi;
  }

  void remove_span(char* p) { spans_.erase(reinterpret_cast<uintptr_t>(p)); }

  bool is_live_start(const char* p, size_t rounded) const {
    auto it = spans_.find(reinterpret_cast<uintptr_t>(p));
    return it != spans_.end() &&
           it->second - it->first == rounded + (checked_ ? kFenceBytes : 0);
  }

  Loader* pick_loader() {
    if (loaders_.empty()) return nullptr;
    return &loaders_[in_.u8() % loaders_.size()];
  }

  size_t pick_block(Loader& l) { return static_cast<size_t>(in_.u16()) % l.live.size(); }

  void forget_block(Loader& l, size_t i, bool freed) {
    Block b = l.live[i];
    l.live[i] = l.live.back();
    l.live.pop_back();
    l.used -= b.rounded;
    model_used_ -= b.rounded;
    remove_span(b.p);
    if (freed && checked_) {
      if (l.freed.size() >= kMaxFreedRemembered) l.freed.erase(l.freed.begin());
      l.freed.push_back(b);
    }
  }

  void destroy_loader(size_t index, ms_error_t expected) {
    Loader& l = loaders_[index];
    if (expected == MS_OK) {
      for (const Block& b : l.live) check_pattern(b, "before loader destruction");
    }
    ms_error_t e = ms_loader_destroy(l.handle);
    FUZZ_CHECK(e == expected, "ms_loader_destroy: %s, expected %s", ms_error_name(e),
               ms_error_name(expected));
    forget_loader(index);
  }

  // The model's side of a loader's death: its blocks, its handle among the dead, its slot.
  void forget_loader(size_t index) {
    Loader& l = loaders_[index];
    while (!l.live.empty()) forget_block(l, l.live.size() - 1, false);
    dead_.push_back({l.handle, deaths_++});
    loaders_[index] = std::move(loaders_.back());
    loaders_.pop_back();
  }

  // Which fault points fired during the current operation.
  struct FaultWatch {
    uint64_t before[os::kFaultPoints];
  };
  FaultWatch watch() const {
    FaultWatch w{};
    for (int p = 0; p < os::kFaultPoints; p++) {
      w.before[p] = os::fault_point_calls(static_cast<os::FaultPoint>(p));
    }
    return w;
  }
  bool fired(const FaultWatch& w, int point) {
    uint64_t now = os::fault_point_calls(static_cast<os::FaultPoint>(point));
    if (armed_at_[point] != 0 && w.before[point] < armed_at_[point] && now >= armed_at_[point]) {
      armed_at_[point] = 0;
      return true;
    }
    return false;
  }

  // While one of these lives, the release fault point is disarmed; then it is armed again for
  // the calls it had left. For the metaspaces of an operation's own (not the session's): when
  // munmap is refused, ms_destroy (or an ms_create that fails and undoes its reservations)
  // leaves that address space mapped (docs/guarantees.md). A 40-minute run (73 626 inputs)
  // leaked 2 585 bookkeeping ranges of 4 GiB that way until the process had no address space
  // left and a later ms_create was refused, failing the check that a metaspace at a settings
  // bound works. Refused munmaps stay tested by the session's own purges.
  class ReleaseFaultParked {
   public:
    explicit ReleaseFaultParked(uint64_t* armed_at) : armed_at_(armed_at) {
      uint64_t now = os::fault_point_calls(os::FaultPoint::kRelease);
      left_ = *armed_at_ > now ? *armed_at_ - now : 0;
      if (left_ != 0) os::inject_fault(os::FaultPoint::kRelease, 0);
    }
    ~ReleaseFaultParked() {
      if (left_ == 0) return;
      os::inject_fault(os::FaultPoint::kRelease, left_);
      *armed_at_ = os::fault_point_calls(os::FaultPoint::kRelease) + left_;
    }
    ReleaseFaultParked(const ReleaseFaultParked&) = delete;
    ReleaseFaultParked& operator=(const ReleaseFaultParked&) = delete;

   private:
    uint64_t* armed_at_;
    uint64_t left_ = 0;
  };

  // ---- operations ----

  void step() {
    uint8_t op = in_.u8();
    switch (op % 25) {
      case 0: op_create_loader(); break;
      case 1: op_destroy_loader(); break;
      case 2: op_use_after_destroy(); break;
      case 3: case 4: case 5: case 6: op_allocate(); break;
      case 7: case 8: op_free_valid(); break;
      case 9: op_free_double(); break;
      case 10: op_free_foreign(); break;
      case 11: op_free_interior(); break;
      case 12: op_free_wrong_size(); break;
      case 13: op_stats(); break;
      case 14: ms_purge(ms_); break;
      case 15: op_overrun(); break;
      case 16: op_inject_fault(); break;
      case 17: op_threshold(); break;
      case 18: op_bad_handles(); break;
      case 19: op_class_pointers(); break;
      case 20: op_foreign_handle(); break;
      case 21: op_settings_bound(); break;
      case 22: op_observe(); break;
      case 23: op_write_after_free(); break;
      case 24: op_side_metaspace(); break;
    }
  }

  // A second metaspace that dies while it is used: an observer thread polls it (ms_get_usage,
  // ms_get_stats or ms_verify) until it sees MS_ERR_DESTROYED while this thread destroys it;
  // or its GC callback destroys it from within an allocation (perhaps creating another metaspace
  // there) or from ms_set_gc_threshold. Every call after says MS_ERR_DESTROYED, no call reads the
  // dead metaspace. Not while a fault is armed: the session's model counts the fault points.
  void op_side_metaspace() {
    for (int p = 0; p < os::kFaultPoints; p++) {
      if (armed_at_[p] != 0 && os::fault_point_calls(static_cast<os::FaultPoint>(p)) < armed_at_[p]) {
        return;
      }
    }
    uint8_t how = in_.u8();
    uint8_t n = in_.u8();
    ms_settings_t s;
    ms_settings_init(&s);
    s.class_space_bytes = 16u << 20;
    s.checked = (how & 8) ? 1 : 0;
    SideEvents events;
    events.create_another = (how & 16) != 0;
    if (how % 3 == 1) {
      s.max_committed_bytes = (size_t{1} << 20) + (n % 8) * (size_t{256} << 10);
      s.gc_threshold_bytes = s.max_committed_bytes / 2;
      s.gc_callback = side_gc_callback;
      s.gc_callback_user = &events;
    }
    ms_metaspace_t* side = ms_create(&s);
    FUZZ_CHECK(side != nullptr, "side metaspace: %s", ms_last_error_text());
    ms_loader_t* l = ms_loader_create(side, MS_LOADER_STANDARD, 0);
    FUZZ_CHECK(l != nullptr, "side loader: %s", ms_last_error_text());
    switch (how % 3) {
      case 0: {  // destroyed while an observer polls it
        for (unsigned i = 0; i < n % 16u; i++) {
          FUZZ_CHECK(ms_allocate(l, i % 3 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, 64 + i * 40) != nullptr,
                     "side allocation: %s", ms_last_error_text());
        }
        std::atomic<bool> started{false};
        ms_error_t bad = MS_OK;
        const int call = (how >> 5) % 3;
        std::thread observer([&] {
          for (;;) {
            ms_error_t e = metaspace::test::observe(side, call);
            started.store(true);
            if (e == MS_ERR_DESTROYED) return;
            if (e != MS_OK) {
              bad = e;
              return;
            }
          }
        });
        while (!started.load()) std::this_thread::yield();
        ms_destroy(side);
        observer.join();
        FUZZ_CHECK(bad == MS_OK, "observer of a metaspace being destroyed: %s", ms_error_name(bad));
        break;
      }
      case 1: {  // the GC callback destroys it from within an allocation
        void* p = reinterpret_cast<void*>(1);
        for (int i = 0; i < 4096 && events.calls == 0 && p != nullptr; i++) {
          p = ms_allocate(l, i % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, 1000);
        }
        FUZZ_CHECK(events.calls == 1, "side gc callback came %d times", events.calls);
        FUZZ_CHECK(p == nullptr && ms_last_error() == MS_ERR_DESTROYED,
                   "allocation whose callback destroyed its metaspace: %p, %s", p,
                   ms_last_error_text());
        break;
      }
      case 2: {  // ms_set_gc_threshold below what is committed: delivered at once
        FUZZ_CHECK(ms_allocate(l, MS_SPACE_NONCLASS, 4096 + n * 64u) != nullptr, "side allocation");
        ms_set_gc_threshold(side, 4096, side_gc_callback, &events);
        FUZZ_CHECK(events.calls == 1, "side gc callback came %d times", events.calls);
        break;
      }
    }
    ms_usage_t u{};
    u.size = sizeof u;
    FUZZ_CHECK(ms_get_usage(side, &u) == MS_ERR_DESTROYED, "usage of a destroyed metaspace");
    ms_destroy(side);
    FUZZ_CHECK(ms_last_error() == MS_ERR_DESTROYED, "a second ms_destroy");
    if (events.created != nullptr) {
      FUZZ_CHECK(ms_verify(events.created) == MS_OK, "metaspace created in the callback");
      ms_destroy(events.created);
    }
    FUZZ_CHECK(ms_verify(ms_) == MS_OK, "the session's metaspace after a side one died: %s",
               ms_last_error_text());
  }

  void op_create_loader() {
    uint8_t k = in_.u8();
    uint8_t f = in_.u8();
    int kind = k % 4 == 3 ? (k & 0x10 ? -1 : 3 + k) : k % 4;
    unsigned flags = f % 4 == 3 ? 2u << (f >> 4) : (f & 1 ? MS_LOADER_SHARED : 0u);
    bool bad = kind < 0 || kind > 2 || (flags & ~MS_LOADER_SHARED) != 0;
    if (!bad && loaders_.size() >= kMaxLoaders) return;
    FaultWatch w = watch();
    ms_loader_t* l = msfuzz_loader_create_raw(ms_, kind, flags);
    if (l == nullptr && ms_last_error() == MS_ERR_OUT_OF_MEMORY &&
        fired(w, static_cast<int>(os::FaultPoint::kBookkeeping))) {
      stats_.refused++;
      return;
    }
    if (bad) {
      FUZZ_CHECK(l == nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                 "loader of kind %d flags %#x accepted", kind, flags);
      stats_.bad_calls++;
      return;
    }
    FUZZ_CHECK(l != nullptr, "ms_loader_create(kind %d, flags %#x) failed", kind, flags);
    loaders_.push_back(Loader{l, static_cast<ms_loader_kind_t>(kind), {}, {}, 0,
                              (flags & MS_LOADER_SHARED) != 0});
  }

  void op_destroy_loader() {
    if (loaders_.empty()) return;
    destroy_loader(in_.u8() % loaders_.size(), MS_OK);
  }

  void op_use_after_destroy() {
    if (dead_.empty()) return;
    auto [h, death] = dead_[in_.u8() % dead_.size()];
    if (deaths_ - death >= kDeadHandlesRemembered) return;  // forgotten: may name a loader again
    stats_.bad_calls++;
    switch (in_.u8() % 4) {
      case 0:
        expect_error(ms_loader_destroy(h), {MS_ERR_DESTROYED}, "destroy of a dead loader");
        break;
      case 1: {
        void* p = ms_allocate(h, static_cast<ms_space_t>(in_.u8() & 1), 8 + in_.u8());
        FUZZ_CHECK(p == nullptr && ms_last_error() == MS_ERR_DESTROYED,
                   "allocation from a dead loader");
        break;
      }
      case 2: {
        int x;
        expect_error(ms_deallocate(h, &x, 8), {MS_ERR_DESTROYED}, "free into a dead loader");
        break;
      }
      case 3: {
        ms_loader_stats_t ls;
        expect_error(ms_loader_get_stats(h, &ls), {MS_ERR_DESTROYED}, "stats of a dead loader");
        break;
      }
    }
  }

  size_t decode_size(bool* huge) {
    size_t root = settings_.root_chunk_bytes;
    *huge = false;
    uint8_t sel = in_.u8() % 16;
    switch (sel) {
      case 0: return 0;
      case 8: case 9: case 10: return in_.u16() % (16 << 10) + 1;
      case 11: return in_.u32() % root + 1;
      case 12: return root;
      case 13: {
        *huge = true;
        static const size_t kHuge[4] = {0, SIZE_MAX, SIZE_MAX - 7, size_t{1} << 40};
        size_t h = kHuge[in_.u8() & 3];
        return h == 0 ? root + 1 + in_.u8() : h;
      }
      case 14: {
        size_t a = settings_.class_alignment_bytes;
        size_t n = a * (1 + in_.u8() % 8);
        return in_.u8() & 1 ? n - 8 + 1 : n;
      }
      default: return static_cast<size_t>(in_.u8()) + 1;
    }
  }

  void op_allocate() {
    Loader* l = pick_loader();
    if (l == nullptr) return;
    uint8_t sp = in_.u8();
    bool bad_space = (sp & 7) == 7;
    int space = bad_space ? (sp & 8 ? -1 : 2 + (sp >> 4)) : (sp & 1);
    bool huge = false;
    size_t bytes = decode_size(&huge);
    size_t burst = 1;
    if ((sp & 0x30) == 0x30 && !huge && bytes != 0 && bytes <= 256) burst = 1 + in_.u8() % 32;
    bool unload_in_gc = !bad_space && (sp & 0xC8) == 0xC8;
    for (size_t i = 0; i < burst; i++) {
      if (!allocate_one(*l, space, bytes + 8 * i, huge, unload_in_gc)) break;
    }
  }

  // False when the loader died in the GC callback (l is then gone from the model).
  bool allocate_one(Loader& l, int space, size_t bytes, bool huge, bool unload_in_gc = false) {
    if (l.live.size() >= kMaxBlocksPerLoader) return true;
    FaultWatch w = watch();
    gc_.unload = unload_in_gc ? l.handle : nullptr;
    gc_.unloaded = false;
    gc_.replacement = nullptr;
    void* raw = msfuzz_allocate_raw(l.handle, space, bytes);
    gc_.unload = nullptr;
    if (gc_.unloaded) {
      ms_error_t e = ms_last_error();
      FUZZ_CHECK(gc_.unload_result == MS_OK, "ms_loader_destroy from the gc callback: %s",
                 ms_error_name(gc_.unload_result));
      FUZZ_CHECK(raw == nullptr && e == MS_ERR_DESTROYED,
                 "allocation of %zu bytes from a loader the gc callback destroyed: %p, %s", bytes,
                 raw, ms_error_name(e));
      stats_.refused++;
      forget_loader(static_cast<size_t>(&l - loaders_.data()));
      if (gc_.replacement != nullptr) {
        loaders_.push_back(Loader{gc_.replacement, MS_LOADER_STANDARD, {}, {}, 0, false});
      }
      return false;
    }
    bool commit_fault = fired(w, 1), reserve_fault = fired(w, 0);
    bool bookkeeping_fault = fired(w, static_cast<int>(os::FaultPoint::kBookkeeping));
    char* p = static_cast<char*>(raw);
    if (space != 0 && space != 1) {
      FUZZ_CHECK(p == nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                 "allocation in space %d", space);
      stats_.bad_calls++;
      return true;
    }
    if (bytes == 0) {
      FUZZ_CHECK(p == nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                 "allocation of 0 bytes");
      stats_.bad_calls++;
      return true;
    }
    // Checked mode: the block's fence must fit the root chunk too.
    if (huge || bytes > settings_.root_chunk_bytes - (checked_ ? kFenceBytes : 0)) {
      FUZZ_CHECK(p == nullptr && ms_last_error() == MS_ERR_TOO_LARGE, "allocation of %zu bytes",
                 bytes);
      stats_.bad_calls++;
      return true;
    }
    if (p == nullptr) {
      ms_error_t e = ms_last_error();
      bool ok = (e == MS_ERR_LIMIT && settings_.max_committed_bytes != 0) ||
                (e == MS_ERR_CLASS_SPACE_FULL && space == MS_SPACE_CLASS) ||
                (e == MS_ERR_COMMIT_FAILED && commit_fault) ||
                (e == MS_ERR_RESERVE_FAILED && reserve_fault) ||
                (e == MS_ERR_OUT_OF_MEMORY && bookkeeping_fault) ||
                (e == MS_ERR_OVERWRITE && written_after_free_ != nullptr);
      FUZZ_CHECK(ok, "allocation of %zu bytes in space %d refused with %s", bytes, space,
                 ms_error_name(e));
      stats_.refused++;
      return true;
    }
    stats_.allocations++;
    size_t rounded = (bytes + 7) & ~size_t{7};
    size_t align = space == MS_SPACE_CLASS ? settings_.class_alignment_bytes : 8;
    FUZZ_CHECK(reinterpret_cast<uintptr_t>(p) % align == 0, "block %p not aligned to %zu",
               (void*)p, align);
    if (space == MS_SPACE_CLASS) {
      FUZZ_CHECK(ms_is_class_space(ms_, p), "class block %p outside the class space", (void*)p);
      FUZZ_CHECK(ms_decode_class(ms_, ms_encode_class(ms_, p)) == p,
                 "class pointer %p does not survive encoding", (void*)p);
    }
    FUZZ_CHECK(written_after_free_ == nullptr || written_after_free_ < p ||
                   written_after_free_ >= p + rounded,
               "checked mode handed out block %p (%zu bytes) holding %p, written after its free",
               (void*)p, rounded, (void*)written_after_free_);
    add_span(p, rounded + (checked_ ? kFenceBytes : 0));
    Block b{p, bytes, rounded, static_cast<uint8_t>(1 + pattern_++ % 200)};
    fill_pattern(b);
    l.live.push_back(b);
    l.used += rounded;
    model_used_ += rounded;
    return true;
  }

  void op_free_valid() {
    Loader* l = pick_loader();
    if (l == nullptr || l->live.empty()) return;
    size_t i = pick_block(*l);
    Block b = l->live[i];
    check_pattern(b, "before free");
    // The size must round to the same words; any size that does is the same block.
    size_t size = in_.u8() & 1 ? b.rounded : b.bytes;
    FaultWatch w = watch();
    ms_error_t e = ms_deallocate(l->handle, b.p, size);
    // A loader's first free makes its free-block structure: an injected bookkeeping failure
    // refuses the free, and the block stays live and intact.
    if (e == MS_ERR_OUT_OF_MEMORY && fired(w, static_cast<int>(os::FaultPoint::kBookkeeping))) {
      check_pattern(b, "after a refused free");
      stats_.refused++;
      return;
    }
    FUZZ_CHECK(e == MS_OK, "free of live block %p (%zu bytes): %s", (void*)b.p, b.bytes,
               ms_error_name(e));
    if (checked_ && b.rounded >= 256) {
      FUZZ_CHECK(static_cast<uint8_t>(b.p[b.rounded - 1]) == 0xF3,
                 "checked mode: freed block %p not zapped", (void*)b.p);
    }
    forget_block(*l, i, true);
  }

  void op_free_double() {
    Loader* l = pick_loader();
    if (l == nullptr || l->freed.empty() || !checked_) return;
    const Block& b = l->freed[in_.u8() % l->freed.size()];
    if (is_live_start(b.p, b.rounded)) return;  // reallocated with that size: a valid free
    stats_.bad_calls++;
    expect_error(ms_deallocate(l->handle, b.p, b.bytes), {MS_ERR_DOUBLE_FREE, MS_ERR_OVERWRITE},
                 "double free");
  }

  void op_free_foreign() {
    Loader* l = pick_loader();
    if (l == nullptr) return;
    stats_.bad_calls++;
    uint8_t kind = in_.u8() % 8;
    switch (kind) {
      case 0: {  // another loader's live block
        if (loaders_.size() < 2) return;
        Loader& other = loaders_[in_.u8() % loaders_.size()];
        if (&other == l || other.live.empty()) return;
        const Block& b = other.live[pick_block(other)];
        expect_error(ms_deallocate(l->handle, b.p, b.bytes), {MS_ERR_NOT_OWNED},
                     "free of another loader's block");
        break;
      }
      case 1: {  // a misaligned pointer into a live block of this loader
        if (l->live.empty()) return;
        const Block& b = l->live[pick_block(*l)];
        size_t off = 1 + in_.u8() % 7;
        if (off >= b.bytes) return;
        expect_error(ms_deallocate(l->handle, b.p + off, b.bytes - off), {MS_ERR_NOT_OWNED},
                     "free of a misaligned pointer");
        break;
      }
      case 2: {  // stack memory
        alignas(16) char local[64];
        expect_error(ms_deallocate(l->handle, local, 16), {MS_ERR_NOT_OWNED}, "free of stack");
        break;
      }
      case 3: {  // heap memory
        std::vector<uint64_t> heap(8);
        expect_error(ms_deallocate(l->handle, heap.data(), 64), {MS_ERR_NOT_OWNED},
                     "free of heap memory");
        break;
      }
      case 4:
        expect_error(ms_deallocate(l->handle, nullptr, 8), {MS_ERR_INVALID_ARGUMENT},
                     "free of NULL");
        break;
      case 5: {
        if (l->live.empty()) return;
        const Block& b = l->live[pick_block(*l)];
        expect_error(ms_deallocate(l->handle, b.p, 0), {MS_ERR_INVALID_ARGUMENT},
                     "free of 0 bytes");
        break;
      }
      case 6: {  // a live block with a size near SIZE_MAX (rounding used to wrap it to 0 words)
        if (l->live.empty()) return;
        const Block& b = l->live[pick_block(*l)];
        size_t size = SIZE_MAX - in_.u8() % 16;
        expect_error(ms_deallocate(l->handle, b.p, size), {MS_ERR_NOT_OWNED},
                     "free with a size near SIZE_MAX");
        break;
      }
      case 7: {  // larger than a root chunk
        if (l->live.empty()) return;
        const Block& b = l->live[pick_block(*l)];
        size_t size = settings_.root_chunk_bytes + 1 + in_.u16();
        expect_error(ms_deallocate(l->handle, b.p, size), {MS_ERR_NOT_OWNED},
                     "free larger than a root chunk");
        break;
      }
    }
  }

  void op_free_interior() {
    Loader* l = pick_loader();
    if (l == nullptr || l->live.empty() || !checked_) return;
    const Block& b = l->live[pick_block(*l)];
    if (b.rounded < 16) return;
    size_t off = 8 * (1 + in_.u16() % (b.rounded / 8 - 1));
    size_t size = 1 + in_.u16() % (b.rounded * 2);
    stats_.bad_calls++;
    expect_error(ms_deallocate(l->handle, b.p + off, size),
                 {MS_ERR_NOT_OWNED, MS_ERR_OVERWRITE, MS_ERR_DOUBLE_FREE}, "interior free");
  }

  void op_free_wrong_size() {
    Loader* l = pick_loader();
    if (l == nullptr || l->live.empty() || !checked_) return;
    const Block& b = l->live[pick_block(*l)];
    size_t size;
    uint8_t how = in_.u8();
    if (how & 1) {
      size = b.rounded + 8 * (1 + in_.u8() % 64);
    } else {
      if (b.rounded <= 8) return;
      size = 8 * (1 + in_.u8() % (b.rounded / 8 - 1));
    }
    stats_.bad_calls++;
    expect_error(ms_deallocate(l->handle, b.p, size),
                 {MS_ERR_NOT_OWNED, MS_ERR_OVERWRITE, MS_ERR_DOUBLE_FREE}, "wrong-size free");
  }

  void op_stats() {
    Loader* l = pick_loader();
    if (l == nullptr) return;
    ms_loader_stats_t ls;
    FUZZ_CHECK(ms_loader_get_stats(l->handle, &ls) == MS_OK, "ms_loader_get_stats");
    FUZZ_CHECK(ls.kind == l->kind, "loader kind %d, created as %d", ls.kind, l->kind);
    size_t used = ls.used_bytes[0] + ls.used_bytes[1];
    size_t slack = l->shared ? SharedWindows::kMaxOpenBytesPerThread : 0;
    FUZZ_CHECK(used >= l->used && used - l->used <= slack,
               "loader statistics say %zu + %zu bytes used, model %zu (+ at most %zu in a window)",
               ls.used_bytes[0], ls.used_bytes[1], l->used, slack);
    for (int s = 0; s < 2; s++) {
      FUZZ_CHECK(ls.committed_bytes[s] <= ls.capacity_bytes[s], "loader committed > capacity");
    }
    expect_error(ms_loader_get_stats(l->handle, nullptr), {MS_ERR_INVALID_ARGUMENT},
                 "loader stats into NULL");
  }

  void op_overrun() {
    Loader* l = pick_loader();
    if (l == nullptr || l->live.empty() || !checked_) return;
    size_t i = pick_block(*l);
    Block b = l->live[i];
    size_t words = 1 + in_.u8() % 3;  // stays within the block's own fence
    std::memset(b.p + b.rounded, 0x5A, words * 8);
    stats_.bad_calls++;
    expect_error(ms_verify(ms_), {MS_ERR_OVERWRITE}, "verify after an overrun");
    expect_error(ms_deallocate(l->handle, b.p, b.bytes), {MS_ERR_OVERWRITE},
                 "free of an overrun block");
    // The loader dies all the same, reporting the overrun.
    destroy_loader(static_cast<size_t>(l - loaders_.data()), MS_ERR_OVERWRITE);
  }

  // Checked mode: a byte of a freed block changed (a use after free). The allocation that would
  // reuse the block must refuse with MS_ERR_OVERWRITE: never follow a smashed link, never hand
  // the byte out. The loader then dies (its fences may report the write: it may have hit a
  // freed fence inside the old block), and ms_verify passes again.
  void op_write_after_free() {
    Loader* l = pick_loader();
    if (l == nullptr || l->freed.empty() || !checked_) return;
    const Block b = l->freed[in_.u8() % l->freed.size()];
    if (overlaps_live(b.p, b.rounded)) return;  // reused since: that write would be an overrun
    // In a shared loader the tag bits of the first byte are not checked against what lies past a
    // block (other threads may be writing there: docs/guarantees.md): other bytes only.
    size_t offset = in_.u16() % b.rounded;
    if (l->shared && offset == 0) offset = 1;  // blocks are 8 bytes at least
    char* at = b.p + offset;
    *at = static_cast<char>(*at ^ static_cast<char>(1 + in_.u8() % 255));
    stats_.bad_calls++;
    int space = ms_is_class_space(ms_, b.p) ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    written_after_free_ = at;
    for (int i = 0; i < 4; i++) {
      // Sizes a reuse of the block could serve (checked mode adds the fence).
      size_t bytes = b.rounded > kFenceBytes + 8 ? 8 + in_.u16() % (b.rounded - kFenceBytes - 7)
                                                 : 8 + in_.u8() % 64;
      allocate_one(*l, space, bytes, false);
    }
    written_after_free_ = nullptr;
    ms_error_t e = ms_loader_destroy(l->handle);
    FUZZ_CHECK(e == MS_OK || e == MS_ERR_OVERWRITE,
               "ms_loader_destroy after a write into a freed block: %s", ms_error_name(e));
    forget_loader(static_cast<size_t>(l - loaders_.data()));
  }

  bool overlaps_live(const char* p, size_t bytes) const {
    uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
    auto next = spans_.lower_bound(lo);
    if (next != spans_.end() && next->first < hi) return true;
    return next != spans_.begin() && std::prev(next)->second > lo;
  }

  void op_inject_fault() {
    int point = in_.u8() % os::kFaultPoints;
    uint64_t nth = 1 + in_.u8() % 8;
    os::inject_fault(static_cast<os::FaultPoint>(point), nth);
    armed_at_[point] = os::fault_point_calls(static_cast<os::FaultPoint>(point)) + nth;
  }

  void op_threshold() {
    uint8_t b = in_.u8();
    if (b == 0) {
      ms_set_gc_threshold(ms_, 0, nullptr, nullptr);
      return;
    }
    ms_stats_t st;
    ms_get_stats(ms_, &st);
    ms_set_gc_threshold(ms_, st.total.committed_bytes + settings_.commit_granule_bytes * (b - 1),
                        gc_callback, &gc_);
  }

  // Readable memory that is no loader, zero or not: the out-of-line calls check the magic word.
  // (The inline ms_allocate reads the handle before any check; non-zero fakes go through
  // ms_allocate_slow here.)
  ms_loader_t* fake_handle(bool* zeros) {
    alignas(64) static char zero_filled[4096];
    alignas(64) static unsigned char filled[4096];
    struct Lookalike {
      char* begin;
      char* end;
      uint64_t count;
      size_t fit;
    };
    alignas(64) static Lookalike lookalike[64];
    alignas(64) static char target[4096];
    uint8_t which = in_.u8();
    *zeros = false;
    switch (which % 4) {
      case 0:
        *zeros = true;
        return reinterpret_cast<ms_loader_t*>(zero_filled);
      case 1:
        std::memset(filled, which | 1, sizeof(filled));
        return reinterpret_cast<ms_loader_t*>(filled);
      case 2:
        for (Lookalike& b : lookalike) b = {target, target + sizeof(target), 0, 0};
        return reinterpret_cast<ms_loader_t*>(lookalike);
      default:
        return reinterpret_cast<ms_loader_t*>(ms_);  // the metaspace is no loader either
    }
  }

  void op_foreign_handle() {
    stats_.bad_calls++;
    bool zeros = false;
    ms_loader_t* fake = fake_handle(&zeros);
    std::vector<unsigned char> before(reinterpret_cast<unsigned char*>(fake),
                                      reinterpret_cast<unsigned char*>(fake) + 128);
    int x = 0;
    ms_loader_stats_t ls;
    switch (in_.u8() % 5) {
      case 0:
        FUZZ_CHECK(ms_allocate_slow(fake, static_cast<ms_space_t>(in_.u8() & 1), 8 + in_.u8()) ==
                           nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                   "slow allocation from a non-loader");
        break;
      case 1:
        expect_error(ms_deallocate(fake, &x, 8), {MS_ERR_INVALID_ARGUMENT},
                     "free into a non-loader");
        break;
      case 2:
        expect_error(ms_loader_destroy(fake), {MS_ERR_INVALID_ARGUMENT}, "destroy a non-loader");
        break;
      case 3:
        expect_error(ms_loader_get_stats(fake, &ls), {MS_ERR_INVALID_ARGUMENT},
                     "stats of a non-loader");
        break;
      case 4:
        if (zeros) {
          FUZZ_CHECK(ms_allocate(fake, MS_SPACE_NONCLASS, 16) == nullptr &&
                         ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                     "allocation from a zero-filled non-loader");
        }
        break;
    }
    FUZZ_CHECK(std::memcmp(before.data(), fake, before.size()) == 0,
               "a call through a non-loader handle wrote to it");
  }

  // ms_create with one setting at or just past a bound: refused with MS_ERR_INVALID_ARGUMENT
  // (past) or created and working (at).
  void op_settings_bound() {
    ReleaseFaultParked parked(&armed_at_[static_cast<int>(os::FaultPoint::kRelease)]);
    ms_settings_t s;
    ms_settings_init(&s);
    s.root_chunk_bytes = 64 << 10;
    s.node_bytes = 64 << 10;
    s.class_space_bytes = 256 << 10;
    uint8_t which = in_.u8();
    bool past = (which & 0x80) != 0;
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    switch (which % 10) {
      case 0: s.root_chunk_bytes = past ? 32 << 10 : 64 << 10; break;
      case 1:
        s.root_chunk_bytes = past ? 128u << 20 : 64u << 20;
        s.node_bytes = s.class_space_bytes = s.root_chunk_bytes * 2;
        break;
      case 2: s.commit_granule_bytes = past ? page / 2 : page; break;
      case 3: s.node_bytes = past ? (size_t{4} << 30) + (64 << 10) : size_t{4} << 30; break;
      case 4: s.checked = past ? (which & 1 ? 2 : -1) : 1; break;
      case 5:
        s.commit_granule_bytes = 64 << 10;
        s.class_space_bytes = past ? 64 << 10 : 128 << 10;
        break;
      case 6: s.class_alignment_bytes = past ? 2048 : 1024; break;
      case 7: s.gc_min_free_percent = past ? 100 : 99; s.gc_max_free_percent = 100; break;
      case 8: s.gc_max_free_percent = past ? 101 : 100; break;
      case 9: s.class_space_bytes = past ? (size_t{4} << 30) + (64 << 10) : 4u << 20; break;
    }
    FaultWatch w = watch();
    ms_metaspace_t* ms = ms_create(&s);
    bool faulted = false;  // an armed fault may meet this metaspace instead of the session's
    for (int p = 0; p < os::kFaultPoints; p++) faulted = fired(w, p) || faulted;
    if (faulted) {
      if (ms != nullptr) ms_destroy(ms);
      return;
    }
    if (past) {
      stats_.bad_calls++;
      FUZZ_CHECK(ms == nullptr && ms_last_error() == MS_ERR_INVALID_ARGUMENT,
                 "settings past bound %d accepted", which % 10);
      return;
    }
    FUZZ_CHECK(ms != nullptr, "settings at bound %d refused: %s", which % 10,
               ms_last_error_text());
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    bool served = l != nullptr && ms_allocate(l, MS_SPACE_NONCLASS, 64) != nullptr &&
                  ms_allocate(l, MS_SPACE_CLASS, 64) != nullptr;
    for (int p = 0; p < os::kFaultPoints; p++) faulted = fired(w, p) || faulted;
    FUZZ_CHECK(served || faulted, "metaspace at bound %d cannot allocate: %s", which % 10,
               ms_last_error_text());
    FUZZ_CHECK(ms_verify(ms) == MS_OK, "metaspace at bound %d does not verify", which % 10);
    ms_destroy(ms);
    // Its handle is stale now: refused, never read (docs/guarantees.md), a second destroy too.
    FUZZ_CHECK(ms_verify(ms) == MS_ERR_DESTROYED, "a destroyed metaspace's handle was accepted");
    ms_destroy(ms);
    FUZZ_CHECK(ms_last_error() == MS_ERR_DESTROYED, "a second ms_destroy was not refused");
  }

  void op_bad_handles() {
    stats_.bad_calls++;
    alignas(64) static char not_a_loader[4096];  // zeros: readable, but no loader
    auto* fake = reinterpret_cast<ms_loader_t*>(not_a_loader);
    ms_stats_t st;
    ms_loader_stats_t ls;
    switch (in_.u8() % 12) {
      case 0:
        FUZZ_CHECK(ms_loader_create(nullptr, MS_LOADER_STANDARD, 0) == nullptr &&
                       ms_last_error() == MS_ERR_INVALID_ARGUMENT, "loader of NULL metaspace");
        break;
      case 1:
        FUZZ_CHECK(ms_allocate(nullptr, MS_SPACE_NONCLASS, 8) == nullptr &&
                       ms_last_error() == MS_ERR_INVALID_ARGUMENT, "allocation from NULL");
        break;
      case 2:
        expect_error(ms_deallocate(nullptr, not_a_loader, 8), {MS_ERR_INVALID_ARGUMENT},
                     "free into NULL loader");
        break;
      case 3:
        expect_error(ms_loader_destroy(nullptr), {MS_ERR_INVALID_ARGUMENT}, "destroy NULL");
        break;
      case 4:
        expect_error(ms_loader_get_stats(nullptr, &ls), {MS_ERR_INVALID_ARGUMENT},
                     "stats of NULL loader");
        break;
      case 5:
        expect_error(ms_get_stats(nullptr, &st), {MS_ERR_INVALID_ARGUMENT}, "stats of NULL");
        expect_error(ms_get_stats(ms_, nullptr), {MS_ERR_INVALID_ARGUMENT}, "stats into NULL");
        break;
      case 6:
        expect_error(ms_verify(nullptr), {MS_ERR_INVALID_ARGUMENT}, "verify NULL");
        ms_purge(nullptr);
        ms_set_gc_threshold(nullptr, 1, nullptr, nullptr);
        break;
      case 7:
        expect_error(ms_loader_destroy(fake), {MS_ERR_INVALID_ARGUMENT}, "destroy a non-loader");
        break;
      case 8:
        FUZZ_CHECK(ms_allocate(fake, MS_SPACE_CLASS, 16) == nullptr &&
                       ms_last_error() == MS_ERR_INVALID_ARGUMENT, "allocation from a non-loader");
        break;
      case 9:
        expect_error(ms_deallocate(fake, not_a_loader, 8), {MS_ERR_INVALID_ARGUMENT},
                     "free into a non-loader");
        break;
      case 10: {
        unsigned flags = 2u << (in_.u8() % 30);
        FUZZ_CHECK(ms_loader_create(ms_, MS_LOADER_MICRO, flags) == nullptr &&
                       ms_last_error() == MS_ERR_INVALID_ARGUMENT, "loader flags %#x", flags);
        break;
      }
      case 11:
        FUZZ_CHECK(ms_encode_class(ms_, nullptr) == 0 && ms_decode_class(ms_, 0) == nullptr,
                   "NULL does not encode as 0");
        break;
    }
  }

  // Reports (text and JSON) and statistics between any two calls: they take the same locks as
  // everything else and must not disturb the state.
  void op_observe() {
    static FILE* sink = std::fopen("/dev/null", "w");
    ms_report_options_t o{};
    o.per_loader = 1;
    o.per_kind = 1;
    o.free_lists = 1;
    uint8_t how = in_.u8();
    if (sink != nullptr) {
      FUZZ_CHECK((how & 1 ? ms_write_report_json(ms_, sink, &o) : ms_print_report(ms_, sink, &o))
                     == MS_OK, "report");
    }
    if (how & 2) ms_purge(ms_);
    if (how & 4) {
      ms_gc_done(ms_);
    }
    op_stats();
  }

  void op_class_pointers() {
    Loader* l = pick_loader();
    if (l == nullptr || l->live.empty()) return;
    const Block& b = l->live[pick_block(*l)];
    if (!ms_is_class_space(ms_, b.p)) return;
    uintptr_t base = ms_class_space_base(ms_);
    unsigned shift = ms_class_shift(ms_);
    FUZZ_CHECK((size_t{1} << shift) == settings_.class_alignment_bytes, "class shift %u", shift);
    if ((reinterpret_cast<uintptr_t>(b.p) - base) % settings_.class_alignment_bytes == 0) {
      uint32_t narrow = ms_encode_class(ms_, b.p);
      FUZZ_CHECK(narrow != 0 && ms_decode_class(ms_, narrow) == b.p, "narrow pointer of %p",
                 (void*)b.p);
    }
  }

  Input& in_;
  RunStats stats_;
  ms_settings_t settings_{};
  ms_metaspace_t* ms_ = nullptr;
  bool checked_ = false;
  bool destroy_loaders_first_ = true;
  GcEvents gc_;
  std::vector<Loader> loaders_;
  std::vector<std::pair<ms_loader_t*, uint64_t>> dead_;
  uint64_t deaths_ = 0;
  std::map<uintptr_t, uintptr_t> spans_;  // live blocks (with their fences): start → end
  // During op_write_after_free: the byte written; no allocation may hand it out.
  const char* written_after_free_ = nullptr;
  size_t model_used_ = 0;
  uint32_t pattern_ = 0;
  uint64_t armed_at_[os::kFaultPoints] = {};
};

}  // namespace

RunStats run_input(const uint8_t* data, size_t size) {
  Input in(data, size);
  Session session(in);
  return session.run();
}

}  // namespace metaspace::fuzz
