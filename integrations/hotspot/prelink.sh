#!/usr/bin/env bash
# Builds libmetaspace for linking into libjvm.so: a release static library, prelinked into one
# object whose only global symbols are the C API (ms_*). HotSpot's own metaspace lives in a C++
# namespace called `metaspace` too; with every other symbol local, the two never meet at link time.
#   prelink.sh REPO OUT [asserts]   (OUT/include, OUT/libmetaspace_hotspot.o)
# `asserts` keeps the optimized build and turns MS_ASSERT on, for HotSpot's fastdebug VM.
set -euo pipefail
repo=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
build="$out/build"
asserts=OFF
[ "${3:-}" = asserts ] && asserts=ON
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMETASPACE_TESTS=OFF \
  -DMETASPACE_LAB=OFF -DMETASPACE_BENCH=OFF -DMETASPACE_FAULT_INJECTION=OFF -DMETASPACE_ASSERTS=$asserts \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null
cmake --build "$build" --target metaspace -j2
# Every member of the archive, the code a VM runs at start-up first and the code it may never run
# (reports, the class-data archive, verify) last: the kernel maps a file's pages in 64 KiB windows
# around each fault, so the code start-up runs, kept together, costs fewer resident pages
# (java -version: 192 KiB of the library's code instead of 256).
names=$(ar t "$build/libmetaspace.a")
dups=$(sort <<<"$names" | uniq -d)
[ -z "$dups" ] || { echo "prelink: archive members share a name: $dups" >&2; exit 1; }
members="$build/members"
rm -rf "$members" && mkdir -p "$members"
(cd "$members" && ar x "$build/libmetaspace.a")
cold='^(report|report_json|report_api|json_writer|overhead_breakdown|kind_stats|scale|archive_.*|lazy_relocation|metaspace_verify|shared_windows|builder_handles)\.cpp\.o$'
hot=() cold_objs=()
for m in $names; do
  if [[ $m =~ $cold ]]; then cold_objs+=("$members/$m"); else hot+=("$members/$m"); fi
done
ld -r "${hot[@]}" "${cold_objs[@]}" -o "$build/archive.o"
# HotSpot's build refuses objects that call the global operator new/delete: the library's calls go
# to malloc-based ones of its own (operator_new.cpp), renamed to libms_hs_<mangled name>.
here=$(cd "$(dirname "$0")" && pwd)
renames=()
for sym in $(nm -u "$build/archive.o" | awk '{print $2}' | grep -E '^_Z(nw|na|dl|da)' || true); do
  grep -q "libms_hs_${sym}(" "$here/operator_new.cpp" || {
    echo "prelink: the library calls $sym, which operator_new.cpp does not provide" >&2; exit 1; }
  renames+=(--redefine-sym "$sym=libms_hs_$sym")
done
objcopy "${renames[@]}" "$build/archive.o" "$build/renamed.o"
c++ -O2 -fPIC -c "$here/operator_new.cpp" -o "$build/operator_new.o"
ld -r "$build/renamed.o" "$build/operator_new.o" -o "$build/prelinked.o"
nm -g --defined-only "$build/prelinked.o" | awk '$3 ~ /^ms_/ {print $3}' | sort -u > "$build/api.syms"
[ -s "$build/api.syms" ] || { echo "prelink: no ms_* symbols in the archive" >&2; exit 1; }
# The exception personality references (hidden, weak) stay global too: the static libstdc++
# that libjvm.so links needs one definition of them, and only this object uses exceptions.
nm -g --defined-only "$build/prelinked.o" | awk '$3 ~ /^DW\.ref\./ {print $3}' > "$build/keep.syms"
cat "$build/api.syms" >> "$build/keep.syms"
objcopy --keep-global-symbols="$build/keep.syms" "$build/prelinked.o" "$out/libmetaspace_hotspot.o.new"
mv "$out/libmetaspace_hotspot.o.new" "$out/libmetaspace_hotspot.o"
rm -rf "$out/include" && cp -r "$repo/include" "$out/include"
echo "prelink: $(wc -l < "$build/api.syms") API symbols global in $out/libmetaspace_hotspot.o"
