// Lazy relocation of a mapped archive whose requested base was taken (docs/archive.md, "Relocation").
//
// Moving every marked pointer at ms_create writes nearly every page of the regions: the kernel
// copies ~200 MiB (copy-on-write) for 40 000 classes, 85x the plain map. Instead the regions are
// replaced by anonymous memory registered with userfaultfd (missing pages): the first user-mode
// touch of a page blocks, and a thread of the library fills its cluster (kClusterBytes, aligned,
// like the kernel's fault-around for files) with the file's bytes, every marked pointer moved by
// the delta, through UFFDIO_COPY. ms_create is ready at once; the cost is paid per cluster used.
//
// UFFD_USER_MODE_ONLY (Linux 5.11) needs no privilege (vm.unprivileged_userfaultfd=0 allows it)
// but only user-mode faults are handled: a system call that reads an untouched page of the range
// (write(2) from an archived block, for one) fails with EFAULT. Callers pre-touch such pages
// (read one byte per page first) or choose archive_relocation=eager.
//
// fork() without exec: the child would see untouched pages as zeros (userfaultfd registrations
// are not inherited), so the library's fork handler (api/fork_handlers.hpp) fills every cluster
// of every lazy archive first — the eager cost, paid at the first fork.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace metaspace::archive {

struct LazyRelocationRequest {
  uintptr_t range = 0;                    // page-aligned start of the regions in the mapping
  size_t bytes = 0;                       // page-multiple size of the regions
  int fd = -1;                            // the archive file; the regions start at file_offset
  uint64_t file_offset = 0;
  const uint64_t* pointer_bits = nullptr; // one bit per 8-byte word of the regions
  int64_t delta = 0;
  uint64_t low = 0, high = 0;             // marked words hold [low, high) as written
};

class LazyRelocation {
 public:
  // The regions replaced and registered, the handler running; or null with *why_not saying why
  // (userfaultfd refused, registering failed, ...) and the range as it was (the file's pages).
  static std::unique_ptr<LazyRelocation> start(const LazyRelocationRequest& request, std::string* why_not);
  // Stops the handler, closes the descriptor and unmaps the source view. The range itself is the
  // mapping's to release.
  ~LazyRelocation();
  LazyRelocation(const LazyRelocation&) = delete;
  LazyRelocation& operator=(const LazyRelocation&) = delete;

  // Fills every cluster not filled yet (fork, tests).
  void fill_all();
  // fill_all() for every live lazy relocation of the process: the fork handler, once no thread
  // is inside the library (so none is mapping or unmapping an archive).
  static void fill_all_for_fork();
  // Clusters filled so far (by faults or fill_all).
  size_t clusters_filled() const;

  // Test seam: when set, called instead of the userfaultfd system call (return -1 with errno set
  // to refuse it). Null in production.
  static int (*open_hook)();

  static constexpr size_t kClusterBytes = 64 * 1024;
  static constexpr size_t kPageBytes = 4096;  // the granule UFFDIO_COPY fills (base pages)

 private:
  explicit LazyRelocation(const LazyRelocationRequest& r) : r_(r) {}
  void serve();
  // Fills the cluster holding `address`; false if the kernel refused (other than "already there").
  bool fill_cluster(uintptr_t address, unsigned char* buffer);
  bool copy_in(uintptr_t dst, const unsigned char* src, size_t bytes);

  LazyRelocationRequest r_;
  int uffd_ = -1;
  int stop_[2] = {-1, -1};
  const unsigned char* source_ = nullptr;  // the file's regions, read-only, shared
  std::vector<unsigned char> buffer_;  // the handler's cluster
  std::thread handler_;
  pid_t process_ = 0;  // the process the handler runs in (a fork's child has a copy of this)
  std::atomic<size_t> clusters_filled_{0};

 public:
  // A started relocation: a page-aligned range of whole pages with its pointer bits, the
  // userfaultfd descriptor, the stop pipe, the source view and the handler's cluster buffer in
  // place, and the relocation on the list the fork handler fills. False with MS_ERR_CORRUPTED
  // and the reason otherwise.
  bool verify() const;
};

}  // namespace metaspace::archive
