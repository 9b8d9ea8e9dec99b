#include "command_registry.hpp"

namespace lab {
namespace {

std::vector<std::pair<std::string, std::function<std::unique_ptr<LabCommand>()>>>& makers() {
  static std::vector<std::pair<std::string, std::function<std::unique_ptr<LabCommand>()>>> m;
  return m;
}

}  // namespace

void register_command(const std::string& name, std::function<std::unique_ptr<LabCommand>()> make) {
  for (const auto& m : makers())
    if (m.first == name) return;
  makers().emplace_back(name, std::move(make));
}

std::vector<std::unique_ptr<LabCommand>> make_registered_commands() {
  std::vector<std::unique_ptr<LabCommand>> commands;
  for (const auto& m : makers()) commands.push_back(m.second());
  return commands;
}

}  // namespace lab
