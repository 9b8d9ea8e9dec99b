#!/bin/sh
# The installed lab works on its own: `cmake --install` into a fresh prefix, then the installed
# metaspace-lab runs from an unrelated directory, finds its sibling executables (every backend that
# was built), the plot script and HotSpot's data next to itself, and says the library's version.
# usage: installed_lab_test.sh BUILD_DIR WORK_DIR
set -eu
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work/elsewhere"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
lab="$work/prefix/bin/metaspace-lab"
test -x "$lab" || { echo "metaspace-lab is not installed"; exit 1; }
test -f "$work/prefix/share/metaspace-lab/plot_lab.py" || { echo "plot script not installed"; exit 1; }
test -f "$work/prefix/share/metaspace-lab/hotspot-jdk25-noshare-interleaved.csv" || { echo "data not installed"; exit 1; }
for exe in "$build"/tools/lab/metaspace-lab-*; do
  [ -x "$exe" ] || continue
  test -x "$work/prefix/bin/$(basename "$exe")" || { echo "$(basename "$exe") was built but not installed"; exit 1; }
done
"$lab" --version | grep -q "^metaspace-lab [0-9]" || { echo "--version does not say the version"; exit 1; }

cd "$work/elsewhere"
"$lab" compare interleaved --loaders 5 --classes-per-loader 20 --quiet --out out > run.log 2>&1 ||
  { cat run.log; exit 1; }
# A backend may be skipped only when this build has no executable for it (sanitizer builds leave
# out mimalloc and jemalloc); anything built must have been found beside the installed lab.
for name in $(sed -n 's/^note: \([a-z0-9-]*\): skipped.*/\1/p' run.log); do
  if [ -x "$build/tools/lab/metaspace-lab-$name" ]; then echo "$name was built but skipped"; exit 1; fi
done
if grep -v ": skipped, " run.log | grep -E "not found|no plot"; then exit 1; fi
grep -q "hotspot-25" run.log || { echo "HotSpot's data not shown"; exit 1; }
test -s out/interleaved.json
test -s out/interleaved.html
if python3 -c "import matplotlib" 2> /dev/null; then test -s out/interleaved.png; fi
echo "installed lab ok"
