#!/usr/bin/env bash
# HotSpot's own metaspace tests on the built VM (build.sh), with its own metaspace (off) and with
# libmetaspace (on): the same libjvm.so, the flag the only difference. Prints one line per test
# and the totals; the reports stay in WORK/jtreg-MODE.
#
#   integrations/hotspot/jtreg.sh [WORK] [off|on|on-env|both] [TEST...]
#
# on: the flag as a jtreg VM option (-vmoption), as HotSpot's own testing passes flags. The test
# VM gets it, and so do the VMs a test starts through the test library with the test's options;
# tests marked vm.flagless are then not run. on-env: the flag in JAVA_TOOL_OPTIONS, so that every
# VM any test starts has it, flagless tests included (each prints "Picked up JAVA_TOOL_OPTIONS"
# on stderr). both: off, on and on-env.
# TEST defaults to the metaspace groups below (paths under test/hotspot/jtreg of the source).
# JDK_UNDER_TEST picks another JDK than WORK/jdk (e.g. WORK/jdk-fastdebug); its reports then go to
# WORK/jtreg-MODE-<its folder name>. JTREG_TAG=NAME sends them to WORK/jtreg-MODE-NAME instead, so
# that a run of other tests keeps the reports of the default groups.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=${1:-${MS_HOTSPOT_WORK:-$HOME/.cache/libmetaspace-hotspot}}
modes=${2:-both}
shift $(( $# < 2 ? $# : 2 ))
work=$(cd "$work" && pwd)
jdk=${JDK_UNDER_TEST:-$work/jdk}
tag=""
[ -n "${JDK_UNDER_TEST:-}" ] && tag="-$(basename "$jdk")"
[ -n "${JTREG_TAG:-}" ] && tag="-$JTREG_TAG"
T=$work/jdk17/test/hotspot/jtreg
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(runtime/Metaspace gc/metaspace runtime/ClassUnload gc/class_unloading
         runtime/CompressedOops vmTestbase/metaspace)
fi
[ "$modes" = both ] && modes="off on on-env"
command -v jtreg >/dev/null || { echo "jtreg.sh: jtreg not found (apt-get install jtreg7)" >&2; exit 1; }

for mode in $modes; do
  opts=()
  [ "$mode" = on ] && opts+=(-vmoption:-XX:+UseLibMetaspace)
  [ "$mode" = on-env ] && opts+=(-e:JAVA_TOOL_OPTIONS=-XX:+UseLibMetaspace)
  out=$work/jtreg-$mode$tag
  rm -rf "$out"
  mkdir -p "$out"
  start=$(date +%s)
  echo "== jtreg, flag $mode: ${tests[*]}"
  (cd "$T" && jtreg -jdk:"$jdk" -w:"$out/work" -r:"$out/report" -v:summary -conc:1 \
     -timeoutFactor:4 ${opts[@]+"${opts[@]}"} "${tests[@]}" > "$out/summary.txt" 2>&1) || true
  secs=$(( $(date +%s) - start ))
  "$here/jtreg_table.py" "$out" --seconds "$secs" | tee "$out/table.txt"
done
