#include "instance/live_metaspaces.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "instance/metaspace.hpp"
#include "loader/thread_records.hpp"

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

void lock_for_fork() {
  lock().lock();
  for (Metaspace* ms : list()) ms->lock_for_fork();
  thread_records_lock_for_fork();
}

void unlock_after_fork_in_parent() {
  thread_records_unlock_after_fork(ForkSide::kParent);
  for (auto it = list().rbegin(); it != list().rend(); ++it) (*it)->unlock_after_fork();
  lock().unlock();
}

void unlock_after_fork_in_child() {
  thread_records_unlock_after_fork(ForkSide::kChild);
  for (auto it = list().rbegin(); it != list().rend(); ++it) (*it)->unlock_after_fork();
  lock().unlock();
}

}  // namespace metaspace::live_metaspaces
