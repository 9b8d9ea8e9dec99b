// metaspace-lab-jemalloc: Debian's jemalloc has no symbol prefix and replaces malloc for the
// whole process, so its backend gets a process of its own.
#include "backends/jemalloc_backend.hpp"
#include "cli.hpp"

int main(int argc, char** argv) {
  lab::register_jemalloc_backend();
  return lab::run_cli(argc, argv);
}
