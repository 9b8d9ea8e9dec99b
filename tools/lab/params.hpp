#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

namespace lab {

// The flags of a scenario, kept as a list so that the same values can be bound to several CLI11
// sub-commands (`interleaved` and `compare interleaved`), written into the run's JSON `params`,
// and handed on to the child processes of `compare` exactly as parsed.
//
// Unsigned counts are checked on the text, before CLI11 converts it (which would wrap "-1" into
// 2^64 - 1: `spikes --loaders-per-batch -1` once ate 2.3 GB): negative numbers and values above
// the flag's bound are rejected with the flag's name.
class ParamSet {
 public:
  // The largest value a count flag accepts unless it says otherwise: far beyond any workload that
  // fits in this machine's memory (a class is ~4 KiB), far below a wrapped negative.
  static constexpr std::uint64_t kDefaultMaxCount = 100'000'000;
  struct Bound {
    std::uint64_t max = kDefaultMaxCount;
  };

  template <typename T>
  void add(const std::string& flag, T& value, const std::string& description, Bound bound = {}) {
    Param p;
    p.flag = flag;
    p.bind = [&value, flag, description, bound](CLI::App& app) {
      if constexpr (std::is_same_v<T, bool>) {
        app.add_flag(flag, value, description);
      } else if constexpr (is_vector<T>::value) {
        auto* o = app.add_option(flag, value, description)->delimiter(',')->capture_default_str();
        if constexpr (std::is_unsigned_v<typename T::value_type>) o->check(count_check(bound));
      } else {
        auto* o = app.add_option(flag, value, description)->capture_default_str();
        if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) o->check(count_check(bound));
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
  static CLI::Validator count_check(Bound bound);

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
