#include "instance/live_metaspaces.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <mutex>
#include <new>
#include <vector>

#include "arena/owner_exclusion.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/mutex.hpp"
#include "instance/metaspace.hpp"
#include "os/process_barrier.hpp"

namespace metaspace::live_metaspaces {
namespace {

// Function-local statics: metaspaces may be created from static constructors of the runtime,
// and destroyed from static destructors, in any order relative to this file's.
Mutex& lock() {
  static Mutex* m = new Mutex;  // never destroyed: usable to the very end
  return *m;
}
// A live metaspace and the calls in flight on it that found it under the lock.
struct Entry {
  Metaspace* ms;
  std::atomic<long> calls{0};
};

std::vector<Entry*>& list() {
  static auto* v = new std::vector<Entry*>;
  return *v;
}

// The live metaspaces' addresses, for the handle check of every call that takes a metaspace
// handle (enter, state_of): a process holds one or a few, so the check is a load or two and one
// atomic add, no lock — ms_get_usage is polled by a runtime's monitoring threads at once and
// costs ~50 ns in all, which a mutex taken by every poller would raise and serialize. More
// metaspaces than slots are found under the lock (list()). Written under the lock. A call found
// in slot i is counted in g_slot_calls[i] (static: always there to count in, whatever the slot
// names meanwhile); retire() marks the slot draining before it waits for that count to fall, and
// an entering call re-reads the slot after counting itself in (both sequentially consistent, so
// one of the two sees the other).
constexpr size_t kSlots = 16;
std::atomic<const Metaspace*> g_slots[kSlots];
std::atomic<long> g_slot_calls[kSlots];
const Metaspace* const kDraining = reinterpret_cast<const Metaspace*>(uintptr_t{1});

// The last metaspaces destroyed (under the lock): a handle found here gets MS_ERR_DESTROYED
// rather than MS_ERR_INVALID_ARGUMENT.
const void* g_destroyed[kRememberedDestroyed];
size_t g_destroyed_next = 0;

// The calls of this thread in flight on metaspaces, innermost first.
thread_local Call* t_calls = nullptr;

bool destroyed_recently_locked(const void* address) {
  MS_ASSERT_LOCKED(lock());
  for (const void* dead : g_destroyed) {
    if (dead == address) return true;
  }
  return false;
}

void remember_destroyed_locked(const Metaspace* ms) {
  MS_ASSERT_LOCKED(lock());
  g_destroyed[g_destroyed_next] = ms;
  g_destroyed_next = (g_destroyed_next + 1) % kRememberedDestroyed;
}

// The entry of a live metaspace, taken out of the list (under the lock); null if not there.
Entry* take_out_locked(const Metaspace* ms) {
  MS_ASSERT_LOCKED(lock());
  auto& v = list();
  auto it = std::find_if(v.begin(), v.end(), [&](const Entry* e) { return e->ms == ms; });
  if (it == v.end()) return nullptr;
  Entry* e = *it;
  v.erase(it);
  return e;
}

// Waits until `count` is zero: calls of other threads finishing (statistics, a verification).
void wait_until_left(const std::atomic<long>& count) {
  for (unsigned spins = 0; count.load(std::memory_order_seq_cst) != 0; spins++) {
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace

void add(Metaspace* ms) {
  std::lock_guard<Mutex> guard(lock());
  auto* e = new Entry{ms};
  try {
    list().push_back(e);
  } catch (...) {
    delete e;
    throw;
  }
  for (auto& slot : g_slots) {
    if (slot.load(std::memory_order_relaxed) == nullptr) {
      slot.store(ms, std::memory_order_release);
      break;
    }
  }
}

void remove(Metaspace* ms) {
  std::lock_guard<Mutex> guard(lock());
  // A metaspace whose creation failed was never added, and one that ms_destroy retired is out
  // already: neither is a handle to remember here.
  Entry* e = take_out_locked(ms);
  if (e == nullptr) return;
  MS_ASSERT(e->calls.load() == 0, "metaspace %p destroyed with calls in flight", (void*)ms);
  delete e;
  for (auto& slot : g_slots) {
    if (slot.load(std::memory_order_relaxed) == ms) slot.store(nullptr, std::memory_order_release);
  }
  remember_destroyed_locked(ms);
}

HandleState state_of(const void* handle) {
  if (handle == nullptr) return HandleState::kUnknown;
  for (const auto& slot : g_slots) {
    if (slot.load(std::memory_order_acquire) == handle) return HandleState::kLive;
  }
  std::lock_guard<Mutex> guard(lock());
  for (const Entry* e : list()) {
    if (e->ms == handle) return HandleState::kLive;
  }
  return destroyed_recently_locked(handle) ? HandleState::kDestroyed : HandleState::kUnknown;
}

HandleState enter(const void* handle, Call* call) {
  MS_ASSERT(!call->linked_, "a call entered twice");
  if (handle == nullptr) return HandleState::kUnknown;
  auto link = [&](Metaspace* ms, std::atomic<long>* count) {
    call->ms_ = ms;
    call->count_ = count;
    call->outer_ = t_calls;
    call->linked_ = true;
    t_calls = call;
    return HandleState::kLive;
  };
  for (size_t i = 0; i < kSlots; i++) {
    if (g_slots[i].load(std::memory_order_acquire) != handle) continue;
    g_slot_calls[i].fetch_add(1, std::memory_order_seq_cst);
    if (g_slots[i].load(std::memory_order_seq_cst) == handle) {
      return link(const_cast<Metaspace*>(static_cast<const Metaspace*>(handle)), &g_slot_calls[i]);
    }
    g_slot_calls[i].fetch_sub(1, std::memory_order_seq_cst);  // being retired: the lock decides
    break;
  }
  std::lock_guard<Mutex> guard(lock());
  for (Entry* e : list()) {
    if (e->ms == handle) {
      e->calls.fetch_add(1, std::memory_order_relaxed);
      return link(e->ms, &e->calls);
    }
  }
  return destroyed_recently_locked(handle) ? HandleState::kDestroyed : HandleState::kUnknown;
}

Call::~Call() {
  if (!linked_) return;
  if (count_ != nullptr) count_->fetch_sub(1, std::memory_order_seq_cst);
  MS_ASSERT(t_calls == this, "calls on metaspaces end in the order they began");
  t_calls = outer_;
}

bool retire(Metaspace* ms, Call* own) {
  Entry* e = nullptr;
  std::atomic<long>* slot_calls = nullptr;
  size_t slot = kSlots;
  {
    std::lock_guard<Mutex> guard(lock());
    for (const Call* c = t_calls; c != nullptr; c = c->outer_) {
      if (c->ms_ == ms && c != own && !c->destroy_within_) {
        fail(MS_ERR_INVALID_ARGUMENT, "ms_destroy of metaspace %p from within another call on "
             "it on this thread (only its GC callback may destroy it)", static_cast<void*>(ms));
        return false;
      }
    }
    e = take_out_locked(ms);
    if (e == nullptr) {
      fail(MS_ERR_DESTROYED, "metaspace %p is being destroyed by another thread",
           static_cast<void*>(ms));
      return false;
    }
    for (size_t i = 0; i < kSlots; i++) {
      if (g_slots[i].load(std::memory_order_relaxed) == ms) {
        g_slots[i].store(kDraining, std::memory_order_seq_cst);
        slot = i;
        slot_calls = &g_slot_calls[i];
      }
    }
    remember_destroyed_locked(ms);
  }
  // This thread's calls on it end here: they touch nothing of it after (Call::metaspace()).
  for (Call* c = t_calls; c != nullptr; c = c->outer_) {
    if (c->ms_ != ms) continue;
    c->count_->fetch_sub(1, std::memory_order_seq_cst);
    c->ms_ = nullptr;
    c->count_ = nullptr;
  }
  if (slot_calls != nullptr) wait_until_left(*slot_calls);
  wait_until_left(e->calls);
  std::lock_guard<Mutex> guard(lock());
  delete e;
  if (slot != kSlots) g_slots[slot].store(nullptr, std::memory_order_release);
  return true;
}

Metaspace* holding_loader_address(const void* p) {
  std::lock_guard<Mutex> guard(lock());
  for (Entry* e : list()) {
    if (e->ms->holds_loader_address(p)) return e->ms;
  }
  return nullptr;
}

namespace {
// The bins excluded across a fork (prepare to parent / child: one thread).
std::vector<ms__free_bins*>& excluded_for_fork() {
  static auto* v = new std::vector<ms__free_bins*>;
  return *v;
}
}  // namespace

// The list's lock is not taken: it is held only inside calls of the library, and none is under
// way while the gate is closed. The handlers cannot fail: if the list of excluded bins cannot
// grow, the owners found so far are let in again and the fork goes on without the exclusion
// (as before it existed: an owner caught in its inline free or reuse leaves that loader as after
// an unfinished call).
void exclude_inline_owners_for_fork() {
  auto& excluded = excluded_for_fork();
  excluded.clear();
  try {
    for (Entry* e : list()) e->ms->exclude_owners_for_fork(excluded);
  } catch (const std::bad_alloc&) {
    readmit_inline_owners_after_fork();
    return;
  }
  if (excluded.empty()) return;
  os::process_barrier();  // bins are published only where it is available
  for (const ms__free_bins* b : excluded) OwnerExclusion::wait_until_out(*b);
}

void readmit_inline_owners_after_fork() {
  auto& excluded = excluded_for_fork();
  for (ms__free_bins* b : excluded) OwnerExclusion::readmit(*b);
  // Its storage goes too: 8 bytes per loader that freed, malloc'd and counted nowhere, would
  // otherwise stay between forks.
  std::vector<ms__free_bins*>().swap(excluded);
}

}  // namespace metaspace::live_metaspaces
