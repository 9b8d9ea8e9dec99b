#include "archive/lazy_relocation.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "archive/archive_format.hpp"
#include "common/assert.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace::archive {

int (*LazyRelocation::open_hook)() = nullptr;

namespace {

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

int open_userfaultfd() {
  if (LazyRelocation::open_hook != nullptr) return LazyRelocation::open_hook();
#ifdef SYS_userfaultfd
  return static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
#else
  errno = ENOSYS;
  return -1;
#endif
}

std::string why(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Every live lazy relocation, for the fork handler.
std::mutex& live_lock() {
  static std::mutex m;
  return m;
}
std::vector<LazyRelocation*>& live() {
  static std::vector<LazyRelocation*> v;
  return v;
}
void track(LazyRelocation* l) {
  std::lock_guard guard(live_lock());
  live().push_back(l);
}
void untrack(LazyRelocation* l) {
  std::lock_guard guard(live_lock());
  auto& v = live();
  v.erase(std::remove(v.begin(), v.end(), l), v.end());
}

}  // namespace

void LazyRelocation::fill_all_for_fork() {
  std::lock_guard guard(live_lock());
  for (LazyRelocation* l : live()) l->fill_all();
}

std::unique_ptr<LazyRelocation> LazyRelocation::start(const LazyRelocationRequest& r, std::string* why_not) {
  MS_ASSERT(r.range % kClusterBytes == 0 || r.range % 4096 == 0, "range %#zx not page-aligned", static_cast<size_t>(r.range));
  std::unique_ptr<LazyRelocation> l(new LazyRelocation(r));
  l->uffd_ = open_userfaultfd();
  if (l->uffd_ < 0) {
    *why_not = why("userfaultfd(UFFD_USER_MODE_ONLY) refused");
    return nullptr;
  }
  uffdio_api api{};
  api.api = UFFD_API;
  if (ioctl(l->uffd_, UFFDIO_API, &api) != 0) {
    *why_not = why("UFFDIO_API refused");
    return nullptr;
  }
  const char* source = nullptr;
  if (os::map_file_read_only(r.bytes, r.fd, r.file_offset, &source) != MS_OK) {
    *why_not = std::string("mmap of the file's regions failed: ") + ms_last_error_text();
    return nullptr;
  }
  l->source_ = reinterpret_cast<const unsigned char*>(source);
  if (pipe2(l->stop_, O_CLOEXEC) != 0) {
    *why_not = why("pipe2 failed");
    return nullptr;
  }
  // From here the range changes: anonymous, empty until filled. If registering fails the file's
  // pages are mapped back, so the caller relocates eagerly from the same state as before.
  char* regions = reinterpret_cast<char*>(r.range);
  if (os::map_anonymous_over(regions, r.bytes) != MS_OK) {
    *why_not = std::string("mmap of the anonymous regions failed: ") + ms_last_error_text();
    return nullptr;
  }
  uffdio_register reg{};
  reg.range.start = r.range;
  reg.range.len = r.bytes;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (ioctl(l->uffd_, UFFDIO_REGISTER, &reg) != 0) {
    *why_not = why("UFFDIO_REGISTER refused");
    if (os::map_file_over(regions, r.bytes, r.fd, r.file_offset) != MS_OK) {
      *why_not += std::string("; mapping the file back failed: ") + ms_last_error_text();
    }
    return nullptr;
  }
  try {
    // The handler's buffer is allocated here, not in the handler: the first malloc of a new thread
    // makes glibc map a new arena (64 MiB+), which took the class space's range while ms_create
    // was handing it over (seen: "the class space could not be placed right above it").
    l->buffer_.resize(kClusterBytes);
    l->handler_ = std::thread([p = l.get()] { p->serve(); });
    l->process_ = getpid();
  } catch (...) {
    *why_not = "the handler thread could not be started";
    // Closing the descriptor unregisters the range; map the file back over it.
    close(l->uffd_);
    l->uffd_ = -1;
    (void)os::map_file_over(regions, r.bytes, r.fd, r.file_offset);
    return nullptr;
  }
  track(l.get());
  return l;
}

LazyRelocation::~LazyRelocation() {
  if (handler_.joinable()) {
    untrack(this);
    if (getpid() == process_) {
      char c = 's';
      (void)!write(stop_[1], &c, 1);
      handler_.join();
    } else {
      // The child of a fork (every cluster was filled before it: fill_all_for_fork): the
      // handler runs in the parent only. Joining it here waited forever, and the stop byte
      // (the pipe is the parent's too) would have stopped the parent's. The thread object is
      // let go without a join: 8 bytes kept per archive a child destroys.
      (void)new std::thread(std::move(handler_));
    }
  }
  for (int fd : stop_)
    if (fd >= 0) close(fd);
  if (uffd_ >= 0) close(uffd_);
  if (source_ != nullptr) (void)os::release(reinterpret_cast<char*>(const_cast<unsigned char*>(source_)), r_.bytes);
}

size_t LazyRelocation::clusters_filled() const { return clusters_filled_.load(std::memory_order_relaxed); }

// The handler: one fault message at a time (a faulting thread waits for its cluster; clusters
// are 16 pages so that a walk through the archive faults once per 64 KiB, not per page).
void LazyRelocation::serve() {
  pollfd fds[2] = {{uffd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    uffd_msg msg;
    const ssize_t n = read(uffd_, &msg, sizeof msg);
    if (n != static_cast<ssize_t>(sizeof msg)) continue;  // EAGAIN: another reader, or spurious
    if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
    (void)fill_cluster(static_cast<uintptr_t>(msg.arg.pagefault.address), buffer_.data());
  }
}

bool LazyRelocation::fill_cluster(uintptr_t address, unsigned char* buffer) {
  const uintptr_t offset = (address - r_.range) / kClusterBytes * kClusterBytes;
  const size_t bytes = std::min(kClusterBytes, r_.bytes - offset);
  std::memcpy(buffer, source_ + offset, bytes);
  // Every marked word of the cluster moved by the delta. A word holding something outside the
  // archive as written (only possible in a file damaged after ms_create's checks, or not checked
  // with archive_verify=0) is left as it is: moving it would make a wrong pointer look right.
  auto* words = reinterpret_cast<uint64_t*>(buffer);
  const uint64_t first_word = offset / 8;
  const uint64_t words_in = bytes / 8;
  for_each_marked(r_.pointer_bits, first_word, first_word + words_in, [&](uint64_t w) {
    uint64_t& value = words[w - first_word];
    if (value >= r_.low && value < r_.high) value += static_cast<uint64_t>(r_.delta);
    return true;
  });
  if (!copy_in(r_.range + offset, buffer, bytes)) {
    // Some page of the cluster is there already (two faults on one cluster, or a copy the kernel
    // cut short): the pages one by one, skipping those present.
    for (size_t page = 0; page < bytes; page += kPageBytes) {
      if (!copy_in(r_.range + offset + page, buffer + page, kPageBytes) && errno != EEXIST) return false;
    }
    uffdio_range wake{r_.range + offset, bytes};
    (void)ioctl(uffd_, UFFDIO_WAKE, &wake);
  }
  clusters_filled_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// One UFFDIO_COPY of `bytes` (retried while the kernel says EAGAIN); false with errno otherwise.
bool LazyRelocation::copy_in(uintptr_t dst, const unsigned char* src, size_t bytes) {
  for (;;) {
    uffdio_copy copy{};
    copy.dst = dst;
    copy.src = reinterpret_cast<uintptr_t>(src);
    copy.len = bytes;
    if (ioctl(uffd_, UFFDIO_COPY, &copy) == 0) return true;
    if (errno != EAGAIN) return false;
    if (copy.copy > 0) {
      dst += static_cast<uint64_t>(copy.copy);
      src += copy.copy;
      bytes -= static_cast<size_t>(copy.copy);
      if (bytes == 0) return true;
    }
  }
}

void LazyRelocation::fill_all() {
  std::vector<unsigned char> buffer(kClusterBytes);
  for (uintptr_t offset = 0; offset < r_.bytes; offset += kClusterBytes) (void)fill_cluster(r_.range + offset, buffer.data());
}

bool LazyRelocation::verify() const {
  MS_VERIFY(r_.range % kPageBytes == 0 && r_.bytes % kPageBytes == 0 && r_.bytes > 0,
            "lazy relocation of %#zx, %zu bytes: not whole pages", static_cast<size_t>(r_.range),
            r_.bytes);
  MS_VERIFY(r_.pointer_bits != nullptr && r_.low <= r_.high,
            "lazy relocation of %#zx: no pointer bits, or marked values [%#llx, %#llx)",
            static_cast<size_t>(r_.range), static_cast<unsigned long long>(r_.low),
            static_cast<unsigned long long>(r_.high));
  MS_VERIFY(uffd_ >= 0 && stop_[0] >= 0 && stop_[1] >= 0 && source_ != nullptr &&
                buffer_.size() == kClusterBytes && process_ != 0,
            "lazy relocation of %#zx: descriptor %d, stop pipe %d/%d, source %p, buffer of %zu "
            "bytes, process %d",
            static_cast<size_t>(r_.range), uffd_, stop_[0], stop_[1], (const void*)source_,
            buffer_.size(), static_cast<int>(process_));
  bool tracked = false;
  {
    std::lock_guard guard(live_lock());
    tracked = std::find(live().begin(), live().end(), this) != live().end();
  }
  MS_VERIFY(tracked, "lazy relocation of %#zx is not on the fork handler's list",
            static_cast<size_t>(r_.range));
  return true;
}

}  // namespace metaspace::archive
