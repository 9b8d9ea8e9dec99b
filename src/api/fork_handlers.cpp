#include "api/fork_handlers.hpp"

#include <pthread.h>

#include "archive/lazy_relocation.hpp"
#include "instance/live_metaspaces.hpp"
#include "os/fork_gate.hpp"

namespace metaspace::api {

namespace {

void prepare() {
  os::close_fork_gate();
  live_metaspaces::exclude_inline_owners_for_fork();
  // Userfaultfd registrations are not inherited: the child would read untouched pages as zeros.
  archive::LazyRelocation::fill_all_for_fork();
}

void in_parent() {
  live_metaspaces::readmit_inline_owners_after_fork();
  os::open_fork_gate(os::ForkSide::kParent);
}

void in_child() {
  live_metaspaces::readmit_inline_owners_after_fork();
  os::open_fork_gate(os::ForkSide::kChild);
}

}  // namespace

void install_fork_handlers() {
  // A function-local static: thread-safe, once. Without the handlers (the C library refused),
  // fork behaves as before they existed.
  static const bool installed = [] {
    os::prepare_fork_gate();
    return pthread_atfork(prepare, in_parent, in_child) == 0;
  }();
  (void)installed;
}

}  // namespace metaspace::api
