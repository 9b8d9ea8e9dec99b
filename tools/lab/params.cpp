#include "params.hpp"

#include <fmt/format.h>

#include <charconv>

namespace lab {

CLI::Validator ParamSet::count_check(Bound bound) {
  return CLI::Validator(
      [bound](std::string& text) -> std::string {
        std::string_view t = text;
        while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
        if (!t.empty() && t.front() == '-') return fmt::format("{} is negative; a count is 0 or more", text);
        std::uint64_t v = 0;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > bound.max))
          return fmt::format("{} is too large (at most {})", text, bound.max);
        return {};
      },
      "COUNT", "count");
}

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
