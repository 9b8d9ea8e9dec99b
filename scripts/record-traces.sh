#!/usr/bin/env bash
# Re-records the real-JVM trace fixtures of tools/lab/tests/data with `metaspace-lab record`
# (not part of `make test`: each run starts a JVM with metaspace trace logging, about a minute in all).
#
#   scripts/record-traces.sh [OUT_DIR] [NAME...]  # default: build/traces, every trace (the fixtures
#                                                 # are not overwritten); KEEP_LOGS=1 keeps the raw logs
#
# JAVA_HOME selects the JDK 25 (default: Temurin 25), JDK17_HOME the JDK 17 of the jdk17-* fixtures
# (default: Debian's OpenJDK 17; skipped when missing), whose raw logs are kept as fixtures too
# (they are the other log dialect, docs/hotspot-log.md). LAB selects
# the lab executable (default: build/release/tools/lab/metaspace-lab). JIT threads allocate
# concurrently, so two recordings of one program differ slightly: the counts the tests check are
# those of the committed fixtures (tools/lab/tests/data/README.md), not of a new recording.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/traces}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
LAB=${LAB:-$root/build/release/tools/lab/metaspace-lab}
src=$root/tools/lab/traces/src
[[ -x $LAB ]] || { echo "record-traces: $LAB not built (make release)" >&2; exit 1; }
[[ -x $JAVA_HOME/bin/java ]] || { echo "record-traces: no JDK at $JAVA_HOME (set JAVA_HOME)" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$JAVA_HOME/bin
"$bin/java" -version 2>&1 | head -1

# The loader programs, compiled once (their classes are read back as bytes by the programs).
mkdir -p "$work/classes"
"$bin/javac" -d "$work/classes" "$src"/loaders/*.java

shift || true
wanted=" $* "
record() {  # record NAME COMMAND...: the trace, and the import's counts (after the program's output)
  local name=$1
  shift
  [[ $wanted == "  " || $wanted == *" $name "* ]] || return 0
  echo "== $name: $*"
  local keep=()
  [[ ${KEEP_LOGS:-0} == 1 ]] && keep=(--keep-log "$out/$name.log")
  (cd "$work" && "$LAB" record -o "$out/$name.trace.gz" "${keep[@]}" -- "$@" > "$out/$name.import.txt")
}

record jdk25-version "$bin/java" -Xshare:off -version
record jdk25-unload "$bin/java" -Xshare:off -cp classes Unload
record jdk25-coh-unload "$bin/java" -Xshare:off -XX:+UseCompactObjectHeaders -cp classes Unload
record jdk25-interleave "$bin/java" -Xshare:off -cp classes Interleave 400
record jdk25-many-loaders "$bin/java" -Xshare:off -cp classes ManyLoaders 6 30 40
# Two of the variants below made fixtures: the default class-data sharing (small live, so the
# fixed costs weigh), and more, smaller waves.
record jdk25-unload-cds "$bin/java" -cp classes Unload
record jdk25-ml-10-20-60 "$bin/java" -Xshare:off -cp classes ManyLoaders 10 20 60
# javac and jshell run with the JDK's default class-data sharing (the archived JDK classes are
# mapped, not allocated, as in any ordinary run): with -Xshare:off their traces are 1.6-1.8 times larger.
record jdk25-javac-sample "$bin/javac" -d "$work/javac-out" $(find "$src/javac-sample" -name '*.java' | sort)
# --execution local: the snippets run in jshell's own JVM (by default it starts a second JVM, and
# the log would merge two runs); --no-startup: no default imports (the trace is 6 % smaller).
record jdk25-jshell "$bin/jshell" --execution local --no-startup -q "$src/jshell/session.jsh"
# JDK 17 logs the other dialect ("(non-class sm)" lines): `java -version` as a user runs it (the
# JDK's default class-data sharing) and Unload, their raw logs kept (gzip) beside the traces.
JDK17_HOME=${JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
if [[ -x $JDK17_HOME/bin/java ]]; then
  mkdir -p "$work/classes17"
  "$JDK17_HOME/bin/javac" -d "$work/classes17" "$src"/loaders/*.java
  record17() {  # as record, keeping the raw log of the same run as NAME.log.gz
    local name=$1
    shift
    [[ $wanted == "  " || $wanted == *" $name "* ]] || return 0
    echo "== $name: $*"
    (cd "$work" && "$LAB" record -o "$out/$name.trace.gz" --keep-log "$work/$name.log" -- "$@" \
      > "$out/$name.import.txt")
    gzip -9 -c "$work/$name.log" > "$out/$name.log.gz"
  }
  record17 jdk17-version "$JDK17_HOME/bin/java" -version
  record17 jdk17-unload "$JDK17_HOME/bin/java" -cp classes17 Unload
fi
# Not fixtures: the same programs with other parameters, to see how the library does on traces it
# was not tuned on (docs/bookkeeping.md, "Dead loaders leave their handles", has their figures).
# Recorded with VARIANTS=1, or by name.
variant() {
  [[ ${VARIANTS:-0} == 1 || $wanted == *" $1 "* ]] || return 0
  record "$@"
}
variant ml-3-60-20 "$bin/java" -Xshare:off -cp classes ManyLoaders 3 60 20
variant ml-8-50-100 "$bin/java" -Xshare:off -cp classes ManyLoaders 8 50 100
variant ml-6-30-40-cds "$bin/java" -cp classes ManyLoaders 6 30 40
variant ml-4-100-0 "$bin/java" -Xshare:off -cp classes ManyLoaders 4 100 0
variant ml-12-10-10 "$bin/java" -Xshare:off -cp classes ManyLoaders 12 10 10
variant il-100 "$bin/java" -Xshare:off -cp classes Interleave 100
variant il-1000 "$bin/java" -Xshare:off -cp classes Interleave 1000
variant ml-6-30-40-coh "$bin/java" -Xshare:off -XX:+UseCompactObjectHeaders -cp classes ManyLoaders 6 30 40
ls -l "$out"/*.trace.gz
