#!/bin/sh
# scripts/placement-bound.py is a floor: on every real trace the library's measured worst
# footprint/live must lie on or above it (a floor above a measured figure is a wrong floor), and
# interleave's floor must be what docs/placement-bound.md says (1.048: just under 1.05 since dead
# loaders' objects go back at once; 1.052 with the quarantine of 1 024 dead objects before).
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
exit $status
