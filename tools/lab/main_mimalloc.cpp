// metaspace-lab-mimalloc: linking mimalloc replaces malloc for the whole process, so its backend
// gets a process of its own.
#include "backends/mimalloc_backend.hpp"
#include "cli.hpp"

int main(int argc, char** argv) {
  lab::register_mimalloc_backend();
  return lab::run_cli(argc, argv);
}
