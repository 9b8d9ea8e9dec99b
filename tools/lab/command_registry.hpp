#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lab {

// A sub-command an executable adds beyond the scenarios, registered from its main() like its
// backends: the lab's core library links no allocator, so a command that needs libmetaspace itself
// (`startup`, which maps archives) lives beside the backends and is added here.
class LabCommand {
 public:
  virtual ~LabCommand() = default;
  virtual void add_to(CLI::App& app) = 0;
  // The exit status when this sub-command was parsed and ran.
  virtual std::optional<int> run() = 0;
};

// Registering a name twice (the tests register in every case) keeps the first.
void register_command(const std::string& name, std::function<std::unique_ptr<LabCommand>()> make);
std::vector<std::unique_ptr<LabCommand>> make_registered_commands();

}  // namespace lab
