#!/usr/bin/env bash
# Installs what building, testing and the lab need on a Debian machine; a no-op when all is there.
set -euo pipefail

packages=(g++ cmake ninja-build make pkg-config binutils python3-pip libgtest-dev libbenchmark-dev libmimalloc-dev
          libjemalloc-dev libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev python3 python3-matplotlib
          clang libclang-rt-14-dev
          chromium)  # the lab test that opens its HTML report in a headless browser

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python bindings' tests (bindings/python) run with pytest and build the package with its
# build backend, hatchling (the out-of-tree install test); both installed with pip when missing.
for module in pytest hatchling; do
  if ! python3 -c "import $module" >/dev/null 2>&1; then
    echo "installing: $module (pip)"
    python3 -m pip install --quiet "$module" || python3 -m pip install --quiet --break-system-packages "$module"
  fi
done
