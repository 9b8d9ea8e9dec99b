#include "instance/live_metaspaces.hpp"

#include <algorithm>
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

}  // namespace

void add(Metaspace* ms) {
  std::lock_guard<std::mutex> guard(lock());
  list().push_back(ms);
}

void remove(Metaspace* ms) {
  std::lock_guard<std::mutex> guard(lock());
  auto& v = list();
  v.erase(std::remove(v.begin(), v.end(), ms), v.end());
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
