#!/usr/bin/env bash
# Builds HotSpot 17.0.19 from Debian's source with libmetaspace linked in (-XX:+UseLibMetaspace),
# from a fresh Debian 12 machine, and lays out a JDK that runs it. Every step is skipped when its
# result is there already, so a second run only rebuilds what changed (make and ccache).
#
#   integrations/hotspot/build.sh [WORK]
#   DEBUG_LEVEL=fastdebug integrations/hotspot/build.sh [WORK]
#
# DEBUG_LEVEL=fastdebug builds HotSpot's optimized VM with its asserts on, and links the library
# with MS_ASSERT on; it lives beside the release build (libms-fastdebug/, jdk-fastdebug/).
#
# WORK (default $MS_HOTSPOT_WORK, else ~/.cache/libmetaspace-hotspot) holds everything, outside
# the repository: jdk17/ (source + build folder), libms/ (the library as linked in), jdk/ (the
# installed JDK 17.0.19 with its libjvm.so replaced by the built one), build.log.
# The first build takes about 25 minutes on 2 cores; later ones a few minutes.
# Root is needed for the packages (apt-get); run as root or with sudo available.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-${MS_HOTSPOT_WORK:-$HOME/.cache/libmetaspace-hotspot}}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-$(nproc)}
# The libjvm.so must match the class library of the JDK that runs it: source and binary of
# exactly this version are both served by Debian 12 (a newer binary is served without source).
V=17.0.19+10-1~deb12u2
VERSION_STRING=17.0.19+10
SYSTEM_JDK=/usr/lib/jvm/java-17-openjdk-amd64
SRC=$work/jdk17
LEVEL=${DEBUG_LEVEL:-release}
case $LEVEL in
  release) suffix=""; prelink_mode="" ;;
  fastdebug) suffix="-fastdebug"; prelink_mode="asserts" ;;
  *) echo "build.sh: DEBUG_LEVEL is release or fastdebug, not '$LEVEL'" >&2; exit 2 ;;
esac
CONF=linux-x86_64-server-$LEVEL
LIBMS=$work/libms$suffix
JDK=$work/jdk$suffix
BUILT=$SRC/build/$CONF/support/modules_libs/java.base/server/libjvm.so

say() { printf '\n== %s\n' "$*"; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

jdk_version() { "$1/bin/java" -version 2>&1 | head -n1 | sed -n 's/.*version "\([^"]*\)".*/\1/p'; }

# 1. Packages: build dependencies, jtreg, and the JDK of exactly this version. build-dep and
#    jtreg7 pull the newest openjdk-17, so the matching version is installed last and copied
#    (step 4): later upgrades of the system JDK do not touch the copy.
if [ ! -f "$work/.packages-done" ]; then
  say "packages (apt-get): build dependencies of openjdk-17=$V, jtreg7, ccache"
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    $sudo tee /etc/apt/sources.list.d/libmetaspace-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq dpkg-dev ccache jtreg7 >/dev/null
  $sudo apt-get build-dep -y -qq "openjdk-17=$V" >/dev/null
  pkgs=("openjdk-17-jdk-headless=$V" "openjdk-17-jre-headless=$V")
  dpkg-query -W -f='${Status}' openjdk-17-jre 2>/dev/null | grep -q "install ok" && pkgs+=("openjdk-17-jre=$V")
  $sudo apt-get install -y -qq --allow-downgrades "${pkgs[@]}" >/dev/null
  touch "$work/.packages-done"
fi

# 2. Source, with Debian's patches applied by dpkg-source.
if [ ! -d "$SRC" ]; then
  say "source: openjdk-17 $V (64 MB)"
  (cd "$work" && apt-get source --download-only "openjdk-17=$V" >/dev/null &&
     dpkg-source -x "openjdk-17_${V#*:}.dsc" jdk17 >/dev/null)
fi

# 3. Our patches, once (a patch that reverses cleanly is in already).
for p in "$here"/patches/*.patch; do
  if (cd "$SRC" && patch -p1 -R --dry-run -s -f < "$p" >/dev/null 2>&1); then
    continue
  fi
  say "patch: $(basename "$p")"
  (cd "$SRC" && patch -p1 -s -f < "$p")
done

# 4. The JDK the built VM runs in: a copy of the installed 17.0.19.
if [ ! -x "$JDK/bin/java" ]; then
  v=$(jdk_version "$SYSTEM_JDK")
  if [ "$v" != "17.0.19" ]; then
    echo "build.sh: $SYSTEM_JDK is $v, not 17.0.19: apt-get install --allow-downgrades openjdk-17-jdk-headless=$V openjdk-17-jre-headless=$V" >&2
    exit 1
  fi
  say "JDK copy: $JDK"
  cp -aL "$SYSTEM_JDK" "$JDK.tmp" 2>/dev/null || true  # src.zip is a dangling link
  mv "$JDK.tmp" "$JDK"
  cp "$JDK/lib/server/libjvm.so" "$JDK/lib/server/libjvm.so.packaged"
fi

# 5. libmetaspace as linked into libjvm.so.
say "libmetaspace: $repo -> $LIBMS"
"$here/prelink.sh" "$repo" "$LIBMS" $prelink_mode

# 6. Configure once, then build only HotSpot.
if [ ! -f "$SRC/build/$CONF/spec.gmk" ]; then
  say "configure"
  (cd "$SRC" && bash configure --with-boot-jdk="$SYSTEM_JDK" --with-jvm-variants=server \
     --enable-headless-only --disable-warnings-as-errors --with-debug-level=$LEVEL \
     --with-native-debug-symbols=none --with-version-string="$VERSION_STRING" \
     --with-pcsclite=system --enable-ccache > "$work/configure$suffix.log" 2>&1) ||
    { tail -n 30 "$work/configure$suffix.log"; exit 1; }
fi
say "make hotspot, $LEVEL (log: $work/build$suffix.log)"
start=$(date +%s)
if ! (cd "$SRC" && make hotspot CONF="$CONF" JOBS="$jobs" LOG=warn LIBMETASPACE_HOME="$LIBMS" > "$work/build$suffix.log" 2>&1); then
  grep -E 'error|Error' "$work/build$suffix.log" | head -n 30
  exit 1
fi
echo "built in $(( $(date +%s) - start )) s: $BUILT"

# 7. Install into the JDK copy, dump its CDS archive with the built VM (the packaged archive
#    belongs to the packaged VM; both metaspaces map this one), and check both.
if ! cmp -s "$BUILT" "$JDK/lib/server/libjvm.so"; then
  cp "$BUILT" "$JDK/lib/server/libjvm.so"
  "$JDK/bin/java" -Xshare:dump > "$work/cds-dump$suffix.log" 2>&1 ||
    { tail -n 20 "$work/cds-dump$suffix.log"; exit 1; }
fi
"$JDK/bin/java" -version 2>&1 | sed 's/^/  off: /'
"$JDK/bin/java" -XX:+UseLibMetaspace -version 2>&1 | sed 's/^/  on:  /'
cat <<EOF

Run it:
  $JDK/bin/java -XX:+UseLibMetaspace ...      (libmetaspace)
  $JDK/bin/java ...                           (HotSpot's own metaspace)
Our checks:                        JDK_UNDER_TEST=$JDK integrations/hotspot/tests/run.sh $work
HotSpot's tests, flag off and on:  JDK_UNDER_TEST=$JDK integrations/hotspot/jtreg.sh $work
Real programs side by side:        integrations/hotspot/compare.py --jdk $JDK
EOF
