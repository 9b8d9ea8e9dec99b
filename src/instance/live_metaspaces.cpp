#include "instance/live_metaspaces.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "arena/owner_exclusion.hpp"
#include "instance/metaspace.hpp"
#include "os/process_barrier.hpp"

namespace metaspace::live_metaspaces {
namespace {

// Function-local statics: metaspaces may be created from static constructors of the runtime,
// and destroyed from static destructors, in any order relative to this file's.
std::mutex& lock() {
  static std::mutex* m = new std::mutex;  // never destroyed: usable to the very end
  return *m;
}
std::vector<Metaspace*>& list() {
  static auto* v = new std::vector<Metaspace*>;
  return *v;
}

// The live metaspaces' addresses, for the handle check of every call that takes a metaspace
// handle (state_of): a process holds one or a few, so the check is a load or two, no lock —
// ms_get_usage is polled by a runtime's monitoring threads at once and costs ~50 ns in all, which
// a mutex taken by every poller would raise and serialize. More metaspaces than slots are found
// under the lock (list()). Written under the lock; a metaspace's slot is cleared before its
// object is freed, and a call racing with its own metaspace's destruction is the caller's error.
constexpr size_t kSlots = 16;
std::atomic<const Metaspace*> g_slots[kSlots];

// The last metaspaces destroyed (under the lock): a handle found here gets MS_ERR_DESTROYED
// rather than MS_ERR_INVALID_ARGUMENT, and Metaspace::operator new does not hand out their
// addresses again, so a stale handle never names a metaspace created after it.
const void* g_destroyed[kRememberedDestroyed];
size_t g_destroyed_next = 0;

bool destroyed_recently_locked(const void* address) {
  MS_ASSERT_LOCKED(lock());
  for (const void* dead : g_destroyed) {
    if (dead == address) return true;
  }
  return false;
}

}  // namespace

void add(Metaspace* ms) {
  std::lock_guard<std::mutex> guard(lock());
  list().push_back(ms);
  for (auto& slot : g_slots) {
    if (slot.load(std::memory_order_relaxed) == nullptr) {
      slot.store(ms, std::memory_order_release);
      break;
    }
  }
}

void remove(Metaspace* ms) {
  std::lock_guard<std::mutex> guard(lock());
  auto& v = list();
  auto it = std::find(v.begin(), v.end(), ms);
  // A metaspace whose creation failed was never added: its address is no handle to remember.
  if (it == v.end()) return;
  v.erase(it);
  for (auto& slot : g_slots) {
    if (slot.load(std::memory_order_relaxed) == ms) slot.store(nullptr, std::memory_order_release);
  }
  g_destroyed[g_destroyed_next] = ms;
  g_destroyed_next = (g_destroyed_next + 1) % kRememberedDestroyed;
}

HandleState state_of(const void* handle) {
  if (handle == nullptr) return HandleState::kUnknown;
  for (const auto& slot : g_slots) {
    if (slot.load(std::memory_order_acquire) == handle) return HandleState::kLive;
  }
  std::lock_guard<std::mutex> guard(lock());
  for (const Metaspace* ms : list()) {
    if (ms == handle) return HandleState::kLive;
  }
  return destroyed_recently_locked(handle) ? HandleState::kDestroyed : HandleState::kUnknown;
}

bool destroyed_recently(const void* address) {
  std::lock_guard<std::mutex> guard(lock());
  return destroyed_recently_locked(address);
}

Metaspace* holding_loader_address(const void* p) {
  std::lock_guard<std::mutex> guard(lock());
  for (Metaspace* ms : list()) {
    if (ms->holds_loader_address(p)) return ms;
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
    for (Metaspace* ms : list()) ms->exclude_owners_for_fork(excluded);
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
