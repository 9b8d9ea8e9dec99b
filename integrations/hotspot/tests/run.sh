#!/usr/bin/env bash
# Our own checks of the built VM (build.sh): the report through jcmd, the memory pools against the
# library's figures, and OutOfMemoryError at the cap and at a full class space, with the flag on.
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
expect "-Xshare:dump is refused with the reason" 'cannot dump a CDS archive' \
  "$jdk/bin/java" -Xshare:dump -XX:+UseLibMetaspace -XX:SharedArchiveFile="$tmp/x.jsa"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
