#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "run_result.hpp"

namespace lab {

// The run as one JSON document (schema in tools/lab/README.md):
// {schema_version, scenario, params, machine, backends: [{name, executable, settings, error?,
//  samples: [{phase, step, live, used, committed, rss, mappings, elapsed_ns, extra}]}],
//  references: [{name, source, samples}], verdict: [lines]}
nlohmann::json to_json(const RunResult& result);
void write_json(const RunResult& result, const std::string& path);

// What this machine is: enough to tell two runs' hardware and software apart.
nlohmann::json describe_machine();

}  // namespace lab
