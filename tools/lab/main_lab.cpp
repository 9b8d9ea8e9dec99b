// metaspace-lab: libmetaspace and glibc malloc, which may share a process.
#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "cli.hpp"
#include "startup/startup_command.hpp"

int main(int argc, char** argv) {
  lab::register_elastic_backends();
  lab::register_malloc_backends();
  lab::register_startup_command();
  return lab::run_cli(argc, argv);
}
