#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

namespace lab {

// The flags of a scenario, kept as a list so that the same values can be bound to several CLI11
// sub-commands (`interleaved` and `compare interleaved`), written into the run's JSON `params`,
// and handed on to the child processes of `compare` exactly as parsed.
class ParamSet {
 public:
  template <typename T>
  void add(const std::string& flag, T& value, const std::string& description) {
    Param p;
    p.flag = flag;
    p.bind = [&value, flag, description](CLI::App& app) {
      if constexpr (std::is_same_v<T, bool>) {
        app.add_flag(flag, value, description);
      } else if constexpr (is_vector<T>::value) {
        app.add_option(flag, value, description)->delimiter(',')->capture_default_str();
      } else {
        app.add_option(flag, value, description)->capture_default_str();
      }
    };
    p.json = [&value] { return nlohmann::json(value); };
    p.args = [&value, flag] { return to_args(flag, value); };
    params_.push_back(std::move(p));
  }

  void bind(CLI::App& app) const {
    for (const auto& p : params_) p.bind(app);
  }
  nlohmann::json to_json() const;
  std::vector<std::string> to_args() const;

 private:
  template <typename T>
  struct is_vector : std::false_type {};
  template <typename T>
  struct is_vector<std::vector<T>> : std::true_type {};

  template <typename T>
  static std::vector<std::string> to_args(const std::string& flag, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      return value ? std::vector<std::string>{flag} : std::vector<std::string>{};
    } else if constexpr (is_vector<T>::value) {
      std::string joined;
      for (const auto& v : value) joined += (joined.empty() ? "" : ",") + format_value(v);
      return {flag, joined};
    } else {
      return {flag, format_value(value)};
    }
  }

  template <typename T>
  static std::string format_value(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return v;
    } else if constexpr (std::is_floating_point_v<T>) {
      return nlohmann::json(v).dump();  // shortest text that reads back to the same double
    } else {
      return std::to_string(v);
    }
  }

  struct Param {
    std::string flag;
    std::function<void(CLI::App&)> bind;
    std::function<nlohmann::json()> json;
    std::function<std::vector<std::string>()> args;
  };
  std::vector<Param> params_;
};

}  // namespace lab
