#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan+UBSan, library instrumented for coverage) in
# build/fuzz and fuzzes the API for SECONDS seconds, starting from a copy of the seed corpus.
# Prints the number of executions and the rate; exits non-zero if the fuzzer found a crash
# (the input is kept in build/fuzz/artifacts/). Without clang or its libFuzzer runtime it says
# so and exits 0.
#
#   tests/fuzz/run.sh 60
set -uo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${METASPACE_FUZZ_BUILD:-$root/build/fuzz}
cc=${FUZZ_CC:-clang}
cxx=${FUZZ_CXX:-clang++}

if ! command -v "$cxx" >/dev/null 2>&1 || ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found, skipped"
  exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  > "$probe/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" >/dev/null 2>&1; then
  echo "fuzz: $cxx cannot link libFuzzer (install libclang-rt-dev), skipped"
  exit 0
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMETASPACE_SANITIZE=address,undefined -DMETASPACE_FUZZER=ON \
  -DMETASPACE_LAB=OFF -DMETASPACE_BENCH=OFF >/dev/null || exit 1
cmake --build "$build" --target api_fuzzer archive_fuzzer -j2 >/dev/null || { cmake --build "$build" --target api_fuzzer archive_fuzzer; exit 1; }

work="$probe/work"
mkdir -p "$work/corpus" "$build/artifacts"
cp "$root"/tests/fuzz/corpus/* "$work/corpus/"
start=$(date +%s.%N)
"$build/tests/fuzz/api_fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
  -rss_limit_mb=4096 -max_len=2048 -artifact_prefix="$build/artifacts/" "$work/corpus" >"$work/log" 2>&1
rc=$?
end=$(date +%s.%N)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
if [ "$rc" -ne 0 ]; then
  tail -60 "$work/log"
  echo "fuzz: FAILED (exit $rc) after ${execs:-?} executions; crashing input in $build/artifacts/"
  exit 1
fi
grep -E "^(#[0-9]+ *DONE|stat::|api_fuzzer:)" "$work/log"
awk -v n="${execs:-0}" -v s="$start" -v e="$end" -v c="$(ls "$work/corpus" | wc -l)" \
  'BEGIN { printf "fuzz: %d executions in %.0f s (%.0f exec/s), corpus grew to %d inputs, no crash\n", n, e - s, n / (e - s), c }'

# The archive reader (files from the input), a sixth of the time, at least 5 s.
archive_seconds=$(( seconds / 6 > 5 ? seconds / 6 : 5 ))
mkdir -p "$work/archive_corpus"
"$build/tests/fuzz/archive_fuzzer" -max_total_time="$archive_seconds" -print_final_stats=1 -timeout=30 \
  -rss_limit_mb=4096 -max_len=256 -artifact_prefix="$build/artifacts/archive-" "$work/archive_corpus" \
  >"$work/archive_log" 2>&1
rc=$?
aexecs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/archive_log" | tail -1)
if [ "$rc" -ne 0 ]; then
  tail -60 "$work/archive_log"
  echo "fuzz: archive_fuzzer FAILED (exit $rc) after ${aexecs:-?} executions; input in $build/artifacts/"
  exit 1
fi
echo "fuzz: archive_fuzzer: ${aexecs:-0} executions in ${archive_seconds} s, no crash"
