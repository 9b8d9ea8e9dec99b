// The metaspaces of the process: whether a metaspace handle names one, and which one holds a
// loader object's address.
//
// A loader handle names an object in its metaspace's bookkeeping slabs, and that object is reused
// as soon as the loader dies (dead_handles.hpp). So a call with a stale handle cannot learn its
// metaspace from the object (it may be another loader's now, free, or a page given back that
// reads zeros): the slow paths that meet a handle whose object does not carry it, and
// ms_loader_get_stats (which may race with the loader's destruction), find the metaspace here,
// by the reserved range of its slabs, and ask it under its registry lock. A process holds few
// metaspaces; the lookup is a short scan under one lock, on error paths and statistics only.
#pragma once

#include <atomic>
#include <cstddef>

namespace metaspace {

class Metaspace;

namespace live_metaspaces {

// How many destroyed metaspaces' handles are remembered (state_of, destroyed_recently).
inline constexpr size_t kRememberedDestroyed = 64;

void add(Metaspace* ms);
// At destruction, if retire() did not take it out already (a metaspace whose creation failed
// after add, never handed out).
void remove(Metaspace* ms);

// What a metaspace handle names: a live metaspace, one of the last 64 destroyed, or nothing
// known (null, a foreign pointer, or destroyed longer ago). Reads nothing at the handle, so a
// stale or foreign pointer costs no fault. One or two loads for a process's first metaspaces.
// No metaspace is ever placed where one was (Metaspace::operator new takes its storage from
// os/unique_addresses), so a handle never names a metaspace created after it.
enum class HandleState { kLive, kDestroyed, kUnknown };
HandleState state_of(const void* handle);

// A call in flight on a metaspace, from its handle check (enter) to its end (the destructor):
// ms_destroy of that metaspace waits until every call of other threads has left (retire). The
// calls of a thread form a chain through the thread's stack, so that a metaspace destroyed from
// within a call on it on the same thread (the GC callback) ends those calls' hold on it instead
// of waiting for itself. Not copied or moved: the chain points to it.
class Call {
 public:
  Call() = default;
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The metaspace entered, or null: not live at the handle check, or destroyed since by this
  // thread (from within this call: nothing of it may be touched after).
  Metaspace* metaspace() const { return ms_; }
  // Whether ms_destroy of this call's metaspace may run from within it on this thread (the GC
  // callback a call delivers). Elsewhere (a report's write callback) ms_destroy is refused.
  void allow_destroy_within(bool allow) { destroy_within_ = allow; }

 private:
  friend HandleState enter(const void* handle, Call* call);
  friend bool retire(Metaspace* ms, Call* own);
  Metaspace* ms_ = nullptr;
  std::atomic<long>* count_ = nullptr;  // where this call is counted in while it holds ms_
  Call* outer_ = nullptr;
  bool linked_ = false;                 // in the thread's chain
  bool destroy_within_ = false;
};

// The handle check of a call (state_of) that also counts the call in while the metaspace is
// live: `call` then names it until the call ends.
HandleState enter(const void* handle, Call* call);

// ms_destroy, from within `own` (the destroying call, entered on ms): takes the metaspace out of
// the live ones (state_of says kDestroyed from now on, and it is remembered among the last 64),
// ends this thread's calls on it, and waits until the calls of other threads have left. False
// with the error recorded if another thread is destroying it already (MS_ERR_DESTROYED) or a
// call on it on this thread does not allow it (MS_ERR_INVALID_ARGUMENT): nothing changed.
bool retire(Metaspace* ms, Call* own);
// The metaspace whose loader objects' range holds p, or null. The caller must not be racing
// with that metaspace's ms_destroy (using a destroyed metaspace is undefined).
Metaspace* holding_loader_address(const void* p);

// fork (docs/threads.md, "fork"), while no thread is inside the library (os/fork_gate.hpp):
// keeps every loader owner out of its inline free and reuse, which take no lock and so are not
// gated (one barrier for all), and lets them in again after the fork, in parent and child.
void exclude_inline_owners_for_fork();
void readmit_inline_owners_after_fork();

}  // namespace live_metaspaces
}  // namespace metaspace
