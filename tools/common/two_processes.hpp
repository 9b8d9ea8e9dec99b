// Two processes holding the same thing at once, each measuring what it gained: the way to show
// that an archive's pages are shared (each process's PSS is about half its RSS for them) where
// built metadata is private (PSS = RSS). Used by bench_archive and the lab's `startup` scenario.
//
// Header-only and libc-only, like proc_memory.hpp, so that plain benchmark programs take it
// without a target to link.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>

#include "proc_memory.hpp"

namespace two_processes {

// Bytes gained since before `hold` ran, measured while the other process also holds its part.
struct Gain {
  std::size_t rss_bytes = 0;
  std::size_t pss_bytes = 0;
};

namespace detail {
inline bool read_all(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t got = read(fd, c, n);
    if (got <= 0) return false;  // the writer died (EOF) or an error
    c += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}
inline void close_all(int* fds, int n) {
  for (int i = 0; i < n; i++) {
    if (fds[i] >= 0) close(fds[i]);
  }
}
}  // namespace detail

// Forks two children. Each runs `hold()`, which makes and keeps what is measured and returns
// what undoes it; each says it is ready and measures only once both are, so each sees the other's
// share. Each child has its own "go" pipe: with one shared pipe, a child that measured quickly
// read both bytes of the first "go" and the other waited forever (seen with 2 000 classes).
// Nothing if a pipe or a fork failed or a child died before it reported.
inline std::optional<std::pair<Gain, Gain>> measure(
    const std::function<std::function<void()>()>& hold) {
  // Per child: a "go" pipe (parent to child) and an "out" pipe (child to parent: a ready byte,
  // then its Gain). Nothing is shared between the children, so one that dies leaves EOF behind.
  int fds[8];
  for (int& fd : fds) fd = -1;
  for (int i = 0; i < 8; i += 2) {
    if (pipe(fds + i) != 0) {
      detail::close_all(fds, 8);
      return std::nullopt;
    }
  }
  const int go_r[2] = {fds[0], fds[2]}, go_w[2] = {fds[1], fds[3]};
  const int out_r[2] = {fds[4], fds[6]}, out_w[2] = {fds[5], fds[7]};
  pid_t pids[2] = {-1, -1};
  for (int i = 0; i < 2; i++) {
    pids[i] = fork();
    if (pids[i] < 0) break;
    if (pids[i] == 0) {
      for (int fd : fds) {
        if (fd != go_r[i] && fd != out_w[i]) close(fd);  // only its own ends
      }
      const std::size_t rss0 = proc_memory::resident_bytes();
      const std::size_t pss0 = proc_memory::proportional_bytes().value_or(0);
      std::function<void()> undo = hold();
      char c = 'r';
      if (write(out_w[i], &c, 1) != 1) _exit(1);
      if (!detail::read_all(go_r[i], &c, 1)) _exit(1);
      Gain g;
      const std::size_t rss1 = proc_memory::resident_bytes();
      const std::size_t pss1 = proc_memory::proportional_bytes().value_or(0);
      g.rss_bytes = rss1 > rss0 ? rss1 - rss0 : 0;
      g.pss_bytes = pss1 > pss0 ? pss1 - pss0 : 0;
      if (write(out_w[i], &g, sizeof g) != static_cast<ssize_t>(sizeof g)) _exit(1);
      // Held until the other one has measured too.
      if (!detail::read_all(go_r[i], &c, 1)) _exit(1);
      if (undo) undo();
      _exit(0);
    }
  }
  // The parent keeps only its ends: a child that dies closes its write ends, so reads see EOF.
  for (int fd : {go_r[0], go_r[1], out_w[0], out_w[1]}) close(fd);
  std::optional<std::pair<Gain, Gain>> result;
  bool ok = pids[0] > 0 && pids[1] > 0;
  char c;
  for (int i = 0; ok && i < 2; i++) ok = detail::read_all(out_r[i], &c, 1);
  for (int i = 0; ok && i < 2; i++) ok = write(go_w[i], "g", 1) == 1;
  std::pair<Gain, Gain> gains;
  ok = ok && detail::read_all(out_r[0], &gains.first, sizeof(Gain)) &&
       detail::read_all(out_r[1], &gains.second, sizeof(Gain));
  if (ok) result = gains;
  // Closing the "go" pipes releases both children whatever happened (EOF ends their wait).
  for (int fd : {go_w[0], go_w[1], out_r[0], out_r[1]}) close(fd);
  for (pid_t p : pids) {
    if (p > 0) waitpid(p, nullptr, 0);
  }
  return result;
}

}  // namespace two_processes
