#!/usr/bin/env bash
# Runs the micro-benchmarks (bench/) against glibc, mimalloc and jemalloc, the lab's headline
# scenarios when metaspace-lab is built, and regenerates BENCHMARKS.md. `make bench` builds first.
#
# Environment: BUILD (default build/release), BENCH_MIN_TIME (seconds per benchmark, default 0.1),
# BENCH_REPETITIONS (default 3), BENCH_FILTER (Google Benchmark regex, default all),
# BENCH_NO_PROFILE=1 (skip callgrind on missed targets), BENCH_NO_LAB=1.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD:-build/release}
out=$build/bench-results
min_time=${BENCH_MIN_TIME:-0.1}
reps=${BENCH_REPETITIONS:-3}
filter=${BENCH_FILTER:-}

mkdir -p "$out"
rm -f "$out"/*.json "$out"/lab-*.txt "$out"/callgrind.*

ran=0
for exe in bench_metaspace bench_mimalloc bench_jemalloc; do
  bin=$build/bench/$exe
  if [ ! -x "$bin" ]; then
    echo "bench.sh: $bin not built, skipped" >&2
    continue
  fi
  echo "== $exe" >&2
  "$bin" --benchmark_min_time="$min_time" --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=true --benchmark_filter="${filter:--alloc_cold}" \
    --benchmark_out="$out/$exe.json" --benchmark_out_format=json >&2
  # First-touch runs: each in a fresh process, so no memory freed earlier can be reused.
  n=0
  for name in $("$bin" --benchmark_list_tests --benchmark_filter="${filter:-.}" | grep alloc_cold); do
    n=$((n + 1))
    "$bin" --benchmark_filter="^${name}\$" --benchmark_out="$out/$exe.cold$n.json" \
      --benchmark_out_format=json >&2
  done
  ran=1
done
[ "$ran" -eq 1 ] || { echo "bench.sh: no benchmark executable in $build/bench" >&2; exit 1; }

# Side by side: the warm allocation, free and reuse rows of libmetaspace (with its counter control)
# and mimalloc, alternately in BENCH_SIDE_ROUNDS rounds (default 7), one repetition each. The rows
# above are minutes apart per allocator; on a shared machine one neighbour's burst then decides a
# ratio (mimalloc ÷ metaspace for alloc/16 went 0.64 to 1.51 between two runs of one tree). Here
# each round measures both within seconds, and the verdict uses the best of the rounds.
side=$out/side
rm -rf "$side"
mkdir -p "$side"
side_filter='^(metaspace|metaspace_nocount|metaspace_counted|mimalloc)/(alloc/(8|16|32|64|mix)|free|reuse)/|^metaspace_shared/alloc/(16|mix)/'
if [ -z "$filter" ] && [ -x "$build/bench/bench_metaspace" ] && [ -x "$build/bench/bench_mimalloc" ]; then
  echo "== side by side: bench_metaspace and bench_mimalloc, ${BENCH_SIDE_ROUNDS:-7} rounds" >&2
  for round in $(seq 1 "${BENCH_SIDE_ROUNDS:-7}"); do
    for exe in bench_metaspace bench_mimalloc; do
      "$build/bench/$exe" --benchmark_min_time="$min_time" --benchmark_filter="$side_filter" \
        --benchmark_out="$side/$exe.$round.json" --benchmark_out_format=json >/dev/null 2>&1 ||
        echo "bench.sh: side-by-side round $round of $exe failed" >&2
    done
  done
fi

# Footprint of micro loaders: one process per allocator, then the 1 M round trip.
# BENCH_MICRO_LOADERS (default 10000), BENCH_ROUNDTRIP_LOADERS (default 1000000).
fp=$build/bench/bench_footprint
if [ -x "$fp" ]; then
  echo "== bench_footprint" >&2
  n=${BENCH_MICRO_LOADERS:-10000}
  {
    "$fp" micro "$n" metaspace
    "$fp" micro "$n" malloc
    for exe in bench_footprint_mimalloc bench_footprint_jemalloc; do
      [ -x "$build/bench/$exe" ] && "$build/bench/$exe" micro "$n" malloc
    done
    "$fp" roundtrip "${BENCH_ROUNDTRIP_LOADERS:-1000000}"
  } >"$out/footprint.jsonl" || echo "bench.sh: bench_footprint failed" >&2
fi

# The class-data archive: map vs build at 40 000 classes, relocation, two processes, lookups
# small vs large (BENCH_ARCHIVE_CLASSES, default 40000; a 200 MiB file in /tmp while it runs).
ab=$build/bench/bench_archive
if [ -x "$ab" ]; then
  echo "== bench_archive" >&2
  "$ab" "${BENCH_ARCHIVE_CLASSES:-40000}" 1000 100000 >"$out/archive.md" ||
    echo "(bench_archive exited with status $?)" >>"$out/archive.md"
fi

# The lab's elasticity figures: the side-by-side tables and verdicts (--brief). Each run is bounded
# so that `make bench` stays within minutes; a failure leaves its output (and the exit status) in
# the file, which BENCHMARKS.md then shows.
lab=$build/tools/lab/metaspace-lab
if [ -z "${BENCH_NO_LAB:-}" ] && [ -x "$lab" ]; then
  for run in "interleaved --spike" "spikes"; do
    name=lab-${run%% *}
    echo "== metaspace-lab compare $run" >&2
    # shellcheck disable=SC2086
    if ! timeout 150 "$lab" compare $run --brief --quiet --out "$out/$name" >"$out/$name.txt" 2>&1; then
      echo "(metaspace-lab compare $run --brief exited with status $?)" >>"$out/$name.txt"
    fi
  done
fi

python3 bench/make_benchmarks_md.py --results "$out" --build "$build" --command "make bench" \
  ${BENCH_NO_PROFILE:+--no-profile} --out BENCHMARKS.md
