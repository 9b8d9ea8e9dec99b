#include "api/fork_handlers.hpp"

#include <pthread.h>

#include "api/exit_report.hpp"
#include "instance/live_metaspaces.hpp"

namespace metaspace::api {

namespace {

// Outermost first: the exit report's list is held while reports take metaspace locks, the
// interned paths' lock is a leaf that no library lock encloses.
void prepare() {
  exit_report_lock_for_fork();
  interned_paths_lock().lock();
  live_metaspaces::lock_for_fork();
}

void in_parent() {
  live_metaspaces::unlock_after_fork_in_parent();
  interned_paths_lock().unlock();
  exit_report_unlock_after_fork();
}

void in_child() {
  live_metaspaces::unlock_after_fork_in_child();
  interned_paths_lock().unlock();
  exit_report_unlock_after_fork();
}

}  // namespace

void install_fork_handlers() {
  // A function-local static: thread-safe, once. Without the handlers (the C library refused),
  // fork behaves as before they existed.
  static const bool installed = pthread_atfork(prepare, in_parent, in_child) == 0;
  (void)installed;
}

}  // namespace metaspace::api
