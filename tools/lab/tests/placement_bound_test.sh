#!/bin/sh
# scripts/placement-bound.py is a floor: on every real trace the library's measured worst
# footprint/live must lie on or above it (a floor above a measured figure is a wrong floor), and
# interleave's floor must be what docs/placement-bound.md says (1.048: just under 1.05 since dead
# loaders' objects go back at once; 1.052 with the quarantine of 1 024 dead objects before).
# The lab's own floor (`metaspace-lab placement-floor`, trace/placement_floor.cpp, which the
# `compare replay` summary prints) is the same model written again: at every marker of every trace
# and at the end of every run of deaths, its live, floor and floor with the loader objects must be
# the script's, to the printed digit (live: the script's MB against the lab's MiB), and so must the
# worst point's.
# usage: placement_bound_test.sh METASPACE-LAB SCRIPT TRACE_DIR
set -eu
lab=$1
script=$2
dir=$3
status=0
for trace in "$dir"/*.trace.gz; do
  name=$(basename "$trace" .trace.gz)
  floor=$(python3 "$script" "$trace" | sed -n 's/^worst: \([0-9.]*\) with the loader objects.*/\1/p')
  measured=$("$lab" replay "$trace" --backends elastic --no-files --brief --quiet |
    sed -n 's/^ *max footprint\/live *elastic *\([0-9.]*\).*/\1/p')
  [ -n "$floor" ] && [ -n "$measured" ] || { echo "$name: no figure (floor '$floor', measured '$measured')"; exit 1; }
  echo "$name: floor $floor, elastic $measured"
  python3 "$script" "$trace" | awk 'NR > 1 && !/^worst/ { print $1, $3, $4, $5 }' > "${TMPDIR:-/tmp}/floor-py.$$"
  "$lab" placement-floor "$trace" | awk 'NR > 1 && !/^worst/ { print $1, $2, $3, $4 }' > "${TMPDIR:-/tmp}/floor-lab.$$"
  if ! paste -d' ' "${TMPDIR:-/tmp}/floor-py.$$" "${TMPDIR:-/tmp}/floor-lab.$$" | awk '
      NF != 8 || $1 != $5 { bad = 1 }
      # live: the script prints MB (10^6 bytes), the lab MiB, each to three decimals.
      { d = $2 - $6 * 1.048576; if (d < 0) d = -d; if (d > 0.0011) bad = 1 }
      { for (i = 3; i <= 4; i++) { d = $i - $(i + 4); if (d < 0) d = -d; if (d > 0.00015) bad = 1 } }
      END { exit bad }'; then
    echo "$name: the lab's placement floor and the script's differ:"
    paste -d' ' "${TMPDIR:-/tmp}/floor-py.$$" "${TMPDIR:-/tmp}/floor-lab.$$"
    status=1
  fi
  lab_worst=$("$lab" placement-floor "$trace" | sed -n 's/^worst: \([0-9.]*\) with the loader objects.*/\1/p')
  [ "$lab_worst" = "$floor" ] || { echo "$name: lab's worst floor $lab_worst, the script's $floor"; status=1; }
  rm -f "${TMPDIR:-/tmp}/floor-py.$$" "${TMPDIR:-/tmp}/floor-lab.$$"
  # The lab prints two decimals.
  if ! awk -v f="$floor" -v m="$measured" 'BEGIN { exit !(m + 0.005 >= f) }'; then
    echo "$name: the floor $floor lies above the measured $measured"
    status=1
  fi
  if [ "$name" = jdk25-interleave ] && ! awk -v f="$floor" 'BEGIN { exit !(f > 1.0465 && f < 1.0485) }'; then
    echo "$name: floor $floor is not the 1.048 of docs/placement-bound.md any more: out of date"
    status=1
  fi
done
# Several traces at once (here the folder): each trace's points, then one row per trace of its worst.
rows=$("$lab" placement-floor "$dir" | sed -n '/^worst point per trace:/,$p' | grep -c ' (live [0-9.]* MiB)$' || true)
count=$(ls "$dir"/*.trace.gz | wc -l)
[ "$rows" -eq "$count" ] || { echo "placement-floor DIR: $rows rows of worst points for $count traces"; status=1; }
exit $status
