// The unit a report prints sizes in: fixed (B, K, M, G — binary multiples) or chosen per value
// (dynamic), as jcmd VM.metaspace's `scale` option.
#pragma once

#include <cstddef>
#include <string>

namespace metaspace {

class Scale {
 public:
  // 0 is dynamic; 'B', 'K', 'M', 'G' (either case) are fixed.
  static bool valid(char unit);
  explicit Scale(char unit);

  std::string format(size_t bytes) const;

 private:
  char unit_;  // 0 or upper case
};

}  // namespace metaspace
