#pragma once

namespace lab {

// `metaspace-lab startup`: start-up with the class-data archive against without it (docs/archive.md,
// tools/lab/README.md). Registered by metaspace-lab's main (it needs the library itself).
void register_startup_command();

}  // namespace lab
