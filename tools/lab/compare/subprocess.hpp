#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lab {

// Runs argv[0] (fork + exec, no shell) with stderr inherited. With `on_line`, the child's stdout
// is read line by line and handed over; without, it is inherited too. Returns the exit status,
// 128 + signal number if the child was killed, or 127 if it could not be started.
int run_process(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_line = {});

}  // namespace lab
