#!/bin/sh
# `metaspace-lab record -- java -version` first time with each JDK of this machine: the java on
# PATH (Debian's OpenJDK 17 here: the "(non-class sm)" log dialect) and Temurin 25 (the "(non-class
# arena)" one) if it is installed. record names the JDK it runs and how to pick another, writes the
# trace, and a replay of that tiny trace flags it "too small to judge" instead of judging it.
# usage: record_test.sh METASPACE-LAB OUT_DIR          (exit 77: no JDK here, skipped)
set -eu
lab=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
ran=0
status=0
try() {  # try NAME [--java HOME]
  name=$1
  shift
  env -u JAVA_HOME "$lab" record -o "$out/$name.trace.gz" "$@" -- java -version > "$out/$name.log" 2>&1 ||
    { echo "$name: record failed"; cat "$out/$name.log"; status=1; return; }
  grep -q '^record: JDK [0-9][0-9.]* at /.* another JDK: --java JDK_HOME or JAVA_HOME=JDK_HOME' "$out/$name.log" ||
    { echo "$name: record does not name the JDK and how to pick another"; cat "$out/$name.log"; status=1; }
  "$lab" replay "$out/$name.trace.gz" --backends elastic --no-files --brief --quiet > "$out/$name.replay" 2>&1 ||
    { echo "$name: replay failed"; cat "$out/$name.replay"; status=1; return; }
  grep -q 'goal <= 1.05: too small to judge' "$out/$name.replay" ||
    { echo "$name: a java -version trace is not flagged too small to judge"; cat "$out/$name.replay"; status=1; }
  echo "$name: $(grep '^record: JDK' "$out/$name.log")"
  ran=$((ran + 1))
}
if command -v java > /dev/null; then try path; fi
temurin=/usr/lib/jvm/temurin-25-jdk-amd64
if [ -x "$temurin/bin/java" ]; then try temurin25 --java "$temurin"; fi
[ "$ran" -gt 0 ] || { echo "no JDK on this machine: skipped"; exit 77; }
exit $status
