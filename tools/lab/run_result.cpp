#include "run_result.hpp"

namespace lab {

nlohmann::json to_json(const Sample& s) {
  return {{"phase", s.phase},       {"step", s.step},         {"live", s.live},
          {"used", s.used},         {"committed", s.committed}, {"footprint", s.footprint}, {"rss", s.rss},
          {"mappings", s.mappings}, {"elapsed_ns", s.elapsed_ns}, {"extra", s.extra}};
}

Sample sample_from_json(const nlohmann::json& j) {
  Sample s;
  s.phase = j.at("phase").get<std::string>();
  s.step = j.at("step").get<int>();
  s.live = j.at("live").get<std::size_t>();
  s.used = j.at("used").get<std::size_t>();
  s.committed = j.at("committed").get<std::size_t>();
  s.footprint = j.value("footprint", s.committed);
  s.rss = j.at("rss").get<std::size_t>();
  s.mappings = j.at("mappings").get<std::size_t>();
  s.elapsed_ns = j.at("elapsed_ns").get<std::uint64_t>();
  s.extra = j.value("extra", nlohmann::json::object());
  return s;
}

}  // namespace lab
