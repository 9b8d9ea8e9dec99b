#!/bin/sh
# The HTML report of a small `compare interleaved --spike` run (what `make run` does, smaller) opens
# in a headless Chromium and every figure in it loads. The page must need no network.
# usage: html_report_test.sh METASPACE-LAB OUT_DIR
set -eu
lab=$1
out=$2
rm -rf "$out"
"$lab" compare interleaved --spike --loaders 5 --classes-per-loader 40 --quiet --out "$out" > "$out.log" 2>&1 ||
  { cat "$out.log"; exit 1; }
html="$out/interleaved.html"
test -s "$html" || { echo "no $html"; exit 1; }
images=$(grep -o '<img ' "$html" | wc -l)
[ "$images" -ge 1 ] || { echo "no figure in $html (is python3-matplotlib installed?)"; cat "$out.log"; exit 1; }
if grep -Eq '(src|href)="(https?:)?//' "$html"; then
  echo "$html refers to the network"
  exit 1
fi

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "chromium is not installed (scripts/install-deps.sh installs it): checked the HTML structurally only"
  exit 0
fi
# A copy of the page that writes, once loaded, how many images it has and how many decoded.
check="$out/check.html"
sed 's#</body>#<script>window.addEventListener("load",function(){var i=Array.prototype.slice.call(document.images);document.body.setAttribute("data-images",i.length+"-"+i.filter(function(x){return x.complete\&\&x.naturalWidth>0;}).length);});</script></body>#' \
  "$html" > "$check"
dom=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --virtual-time-budget=10000 \
  --user-data-dir="$out/chromium-profile" --dump-dom "file://$(realpath "$check")" 2> "$out/chromium.log") ||
  { echo "chromium failed"; tail -20 "$out/chromium.log"; exit 1; }
counts=$(printf '%s' "$dom" | grep -o 'data-images="[0-9]*-[0-9]*"' | head -1 | sed 's/.*="\(.*\)"/\1/')
total=${counts%-*}
loaded=${counts#*-}
echo "images in the page: ${total:-?}, loaded: ${loaded:-?}"
[ -n "$counts" ] && [ "$total" -eq "$images" ] && [ "$loaded" -eq "$total" ]
