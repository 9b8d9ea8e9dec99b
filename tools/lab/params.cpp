#include "params.hpp"

namespace lab {

nlohmann::json ParamSet::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : params_) out[p.flag.substr(2)] = p.json();
  return out;
}

std::vector<std::string> ParamSet::to_args() const {
  std::vector<std::string> out;
  for (const auto& p : params_) {
    auto a = p.args();
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

}  // namespace lab
