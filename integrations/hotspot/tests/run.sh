#!/usr/bin/env bash
# Our own checks of the built VM (build.sh), with the flag on: the report through jcmd, the memory
# pools against the library's figures, OutOfMemoryError at the cap and at a full class space, CDS
# archives dumped and mapped, and class unloading under each collector.
#   integrations/hotspot/tests/run.sh [WORK]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-${MS_HOTSPOT_WORK:-$HOME/.cache/libmetaspace-hotspot}}
jdk=${JDK_UNDER_TEST:-$work/jdk}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$jdk/bin/javac" -d "$tmp/payload" "$here"/../programs/payload/*.java
"$jdk/bin/javac" -d "$tmp/checks" "$here/LibMetaspaceChecks.java"
java=("$jdk/bin/java" -XX:+UseLibMetaspace -cp "$tmp/checks" LibMetaspaceChecks)
passed=0 failed=0
expect() {  # NAME PATTERN COMMAND...
  local name=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1) || true
  if grep -qE "$pattern" <<<"$out"; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    sed 's/^/    /' <<<"$out" | tail -n 30
    failed=$((failed + 1))
  fi
}
expect "jcmd VM.metaspace prints the library's report" '^PASS report' "${java[@]}" report "$tmp/payload"
expect "memory pools show the library's figures" '^PASS mxbean' "${java[@]}" mxbean "$tmp/payload"
expect "OutOfMemoryError: Metaspace at MaxMetaspaceSize" 'OutOfMemoryError: Metaspace' \
  "$jdk/bin/java" -XX:+UseLibMetaspace -XX:MaxMetaspaceSize=24m -cp "$tmp/checks" LibMetaspaceChecks oom "$tmp/payload"
expect "OutOfMemoryError: Compressed class space when it is full" 'OutOfMemoryError: Compressed class space' \
  "$jdk/bin/java" -XX:+UseLibMetaspace -XX:CompressedClassSpaceSize=4m -cp "$tmp/checks" LibMetaspaceChecks oom "$tmp/payload"
expect "-Xshare:on maps the CDS archive below the library's class space" 'mixed mode, sharing' \
  "$jdk/bin/java" -Xshare:on -XX:+UseLibMetaspace -version
expect "-Xshare:off runs unshared" 'mixed mode\)' \
  "$jdk/bin/java" -Xshare:off -XX:+UseLibMetaspace -version
dump() {  # ARCHIVE COMMAND...: the VM's output, then "DUMPED" if it exited 0 and wrote ARCHIVE
  local archive=$1
  shift
  "$@" && [ -s "$archive" ] && echo DUMPED
}
expect "-Xshare:dump with the flag writes an archive" '^DUMPED' \
  dump "$tmp/static.jsa" "$jdk/bin/java" -Xshare:dump -XX:+UseLibMetaspace -XX:SharedArchiveFile="$tmp/static.jsa"
expect "that archive maps without the flag" 'mixed mode, sharing' \
  "$jdk/bin/java" -Xshare:on -XX:SharedArchiveFile="$tmp/static.jsa" -version
expect "that archive maps with the flag" 'mixed mode, sharing' \
  "$jdk/bin/java" -Xshare:on -XX:+UseLibMetaspace -XX:SharedArchiveFile="$tmp/static.jsa" -version
"$jdk/bin/jar" cf "$tmp/checks.jar" -C "$tmp/checks" .
expect "-XX:ArchiveClassesAtExit with the flag writes a dynamic archive" '^DUMPED' \
  dump "$tmp/dynamic.jsa" "$jdk/bin/java" -XX:+UseLibMetaspace -cp "$tmp/checks.jar" \
  -XX:ArchiveClassesAtExit="$tmp/dynamic.jsa" LibMetaspaceChecks report "$tmp/payload"
expect "the dynamic archive's classes load from it with the flag" \
  'LibMetaspaceChecks source: shared objects file \(top\)' \
  "$jdk/bin/java" -XX:+UseLibMetaspace -XX:SharedArchiveFile="$tmp/dynamic.jsa" -Xlog:class+load \
  -cp "$tmp/checks.jar" LibMetaspaceChecks report "$tmp/payload"
"$jdk/bin/javac" -d "$tmp/churn" "$here/../programs/ClassChurn.java"
churn() {  # GC: ClassChurn with the flag; "UNLOADED" if it exits 0 having unloaded payload classes
  local out
  out=$("$jdk/bin/java" -XX:+UseLibMetaspace "-XX:+Use$1GC" -Xlog:class+unload -cp "$tmp/churn" \
        ClassChurn "$tmp/payload" 6 200 2>&1) || { echo "$out"; return 1; }
  grep -q 'unloading class payload\.' <<<"$out" && echo UNLOADED || echo "$out"
}
for gc in Serial Parallel G1 Z Shenandoah; do
  expect "class unloading returns loaders to the library under ${gc}GC" '^UNLOADED' churn "$gc"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
