#!/bin/sh
# The HTML pages open in a headless Chromium, every figure in them loads and every link resolves:
# the report of a small `compare interleaved --spike` run (what `make run` does, smaller), and the
# summary of a two-trace `compare replay` with the page of each trace it links to (and their links
# back to it). The pages must need no network.
# usage: html_report_test.sh METASPACE-LAB OUT_DIR TRACE_DIR
set -eu
lab=$1
out=$2
traces=$3
rm -rf "$out"
mkdir -p "$out"
"$lab" compare interleaved --spike --loaders 5 --classes-per-loader 40 --quiet --out "$out/run" > "$out/run.log" 2>&1 ||
  { cat "$out/run.log"; exit 1; }
"$lab" compare replay "$traces/jdk25-version.trace.gz" "$traces/jdk25-unload-cds.trace.gz" --backends elastic,malloc \
  --quiet --out "$out/replay" > "$out/replay.log" 2>&1 || { cat "$out/replay.log"; exit 1; }

for html in "$out/run/interleaved.html" "$out/replay/summary.html" "$out/replay/jdk25-version.html"; do
  test -s "$html" || { echo "no $html"; exit 1; }
  [ "$(grep -o '<img ' "$html" | wc -l)" -ge 1 ] ||
    { echo "no figure in $html (is python3-matplotlib installed?)"; cat "$out/run.log" "$out/replay.log"; exit 1; }
  if grep -Eq '(src|href)="(https?:)?//' "$html"; then
    echo "$html refers to the network"
    exit 1
  fi
done

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "chromium is not installed (scripts/install-deps.sh installs it): checked the HTML structurally only"
  exit 0
fi

# open PAGE: loads a copy of the page that writes, once loaded, how many images it has, how many
# decoded, and the targets of its links; prints "images loaded href href ...".
open_page() {
  check="$(dirname "$1")/check-$(basename "$1")"
  sed 's#</body>#<script>window.addEventListener("load",function(){var i=Array.prototype.slice.call(document.images);var a=Array.prototype.slice.call(document.links).map(function(x){return x.getAttribute("href");});document.body.setAttribute("data-check",i.length+" "+i.filter(function(x){return x.complete\&\&x.naturalWidth>0;}).length+" "+a.join(" "));});</script></body>#' \
    "$1" > "$check"
  dom=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --virtual-time-budget=10000 \
    --user-data-dir="$out/chromium-profile" --dump-dom "file://$(realpath "$check")" 2> "$out/chromium.log") ||
    { echo "chromium failed on $1" >&2; tail -20 "$out/chromium.log" >&2; return 1; }
  rm -f "$check"
  printf '%s' "$dom" | grep -o 'data-check="[^"]*"' | head -1 | sed 's/.*="\(.*\)"/\1/'
}

status=0
# check PAGE: every image loads; prints the page's links.
check() {
  result=$(open_page "$1") || return 1
  set -- "$1" $result
  page=$1 total=${2:-?} loaded=${3:-?}
  shift 3 2>/dev/null || shift $#
  echo "$(basename "$page"): images $total, loaded $loaded, links: $*" >&2
  [ "$total" != "?" ] && [ "$total" -ge 1 ] && [ "$loaded" -eq "$total" ] || { echo "$page: not every image loaded" >&2; return 1; }
  echo "$@"
}
check "$out/run/interleaved.html" > /dev/null || status=1
links=$(check "$out/replay/summary.html") || status=1
for trace in jdk25-version jdk25-unload-cds; do
  case " $links " in *" $trace.html "*) ;; *) echo "summary.html does not link $trace.html"; status=1 ;; esac
done
for href in $links; do
  target="$out/replay/$href"
  [ -f "$target" ] || { echo "summary.html links $href, which is not there"; status=1; continue; }
  back=$(check "$target") || { status=1; continue; }
  case " $back " in *" summary.html "*) ;; *) echo "$href does not link back to summary.html"; status=1 ;; esac
done
exit $status
