// A queue of loader objects that belong to no live loader (oldest first), linked through the
// objects' own registry links (prev_/next_), which a dead or unused object does not need: the
// registry's kept dead objects and parked objects (loader_registry.hpp). Not thread-safe: the
// registry's lock guards both.
#pragma once

#include <cstddef>

#include "common/verify.hpp"
#include "loader/loader_metaspace.hpp"

namespace metaspace {

class LoaderObjectQueue {
 public:
  LoaderMetaspace* first() const { return first_; }
  bool empty() const { return first_ == nullptr; }
  size_t size() const { return count_; }

  void push_back(LoaderMetaspace* l) {
    l->next_ = nullptr;
    l->prev_ = last_;
    if (last_ != nullptr) last_->next_ = l; else first_ = l;
    last_ = l;
    count_++;
  }
  // l is in this queue.
  void unlink(LoaderMetaspace* l) {
    if (l->prev_ != nullptr) l->prev_->next_ = l->next_; else first_ = l->next_;
    if (l->next_ != nullptr) l->next_->prev_ = l->prev_; else last_ = l->prev_;
    l->next_ = l->prev_ = nullptr;
    count_--;
  }
  LoaderMetaspace* pop_front() {
    LoaderMetaspace* l = first_;
    unlink(l);
    return l;
  }

  // The links agree both ways, the ends are the list's ends, the count is right and every
  // object passes `ok` (the caller's rule for what lies in this queue).
  template <typename Ok>
  bool verify(const char* name, Ok ok) const {
    size_t n = 0;
    for (const LoaderMetaspace* l = first_; l != nullptr; l = l->next_) {
      MS_VERIFY(l->next_ != nullptr ? l->next_->prev_ == l : l == last_,
                "%s loader objects: the list is broken at %p", name, (const void*)l);
      MS_VERIFY(l->prev_ != nullptr || l == first_, "%s loader objects: %p has no predecessor",
                name, (const void*)l);
      if (!ok(l)) return false;
      n++;
    }
    MS_VERIFY(n == count_, "%zu %s loader objects, counter says %zu", n, name, count_);
    return true;
  }

 private:
  LoaderMetaspace* first_ = nullptr;
  LoaderMetaspace* last_ = nullptr;
  size_t count_ = 0;
};

}  // namespace metaspace
