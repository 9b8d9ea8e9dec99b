#pragma once

namespace lab {

// The metaspace-lab command line (all three executables share it; each registers its backends
// before calling). Returns the process exit status: 0 ok, 1 a backend failed, 2 bad usage.
int run_cli(int argc, char** argv);

}  // namespace lab
