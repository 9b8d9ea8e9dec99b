#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"

namespace lab {

using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions&)>;

// Every backend the lab knows, and the executable that provides it: linking mimalloc or jemalloc
// replaces malloc for the whole process, so those live in executables of their own and `compare`
// starts the right one for each backend.
struct BackendEntry {
  std::string name;
  std::string executable;
  std::string description;
};

const std::vector<BackendEntry>& backend_catalog();
std::optional<BackendEntry> find_backend_entry(const std::string& name);

// The backends this executable can create (each main() registers its own).
void register_backend(const std::string& name, BackendFactory factory);
BackendFactory find_backend_factory(const std::string& name);  // empty when not in this executable
std::vector<std::string> registered_backends();

}  // namespace lab
