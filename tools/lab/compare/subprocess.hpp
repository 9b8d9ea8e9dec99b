#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lab {

enum class ChildOutput { inherit, discard };

// Runs argv[0] (fork + exec, no shell, PATH searched). With `on_line`, the child's stdout is read
// line by line and handed over; else it goes where `output` says, as stderr always does. Returns
// the exit status, 128 + signal number if the child was killed, or 127 if it could not be started.
int run_process(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_line = {},
                ChildOutput output = ChildOutput::inherit);

}  // namespace lab
