// Failure messages collected from many threads (gtest assertions are for the main thread), the
// first few kept, reported by the test after joining.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace metaspace::test {

struct Failures {
  std::mutex lock;
  std::vector<std::string> messages;
  void add(std::string m) {
    std::lock_guard<std::mutex> guard(lock);
    if (messages.size() < 20) messages.push_back(std::move(m));
  }
};

}  // namespace metaspace::test
