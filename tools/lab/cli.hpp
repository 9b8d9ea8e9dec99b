#pragma once

#include <string>

namespace lab {

// "metaspace-lab 0.2.0 (libmetaspace 0.2.0, output schema 2)": the library version of the header
// the lab was built with (`--version`).
std::string lab_version();

// The metaspace-lab command line (all three executables share it; each registers its backends
// before calling). Returns the process exit status: 0 ok, 1 a backend failed, 2 bad usage.
int run_cli(int argc, char** argv);

}  // namespace lab
