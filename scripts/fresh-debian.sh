#!/usr/bin/env bash
# Runs the README's commands on a fresh Debian 12 root made with debootstrap, as root:
#
#   sudo scripts/fresh-debian.sh [DIR] [TARGET...]     (default DIR /tmp/fresh-debian, TARGET test)
#
# Why: CI runs `make test` on a clean clone, but on a machine that has built the project before, so
# a package that only this machine happens to have hides a missing install step. The root starts
# from Debian's minimal base plus what a new build machine comes with (the C and C++ toolchain,
# make, CMake, Ninja, GoogleTest, Python with pip, git); everything else must come from
# scripts/install-deps.sh, which `make test` and `make run` call. No Rust toolchain is added, so the
# Rust binding is skipped there as it is on a machine without cargo.
#
# The root gets the host's DNS settings and, if present, its extra CA certificates and pip.conf,
# so that apt and pip reach the same registries through the same network as the host. The
# working tree is a clone of this repository's HEAD (uncommitted changes are not in it).
set -euo pipefail

root=${1:-/tmp/fresh-debian}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(test)
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-debian: run as root (debootstrap and chroot need it)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
fi

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "fresh-debian: debootstrap bookworm into $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log" >&2; exit 1; }
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true; done
}
trap cleanup EXIT
mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc"; mounted+=("$root/proc"); }
for d in sys dev; do
  mountpoint -q "$root/$d" || { mount --rbind "/$d" "$root/$d"; mount --make-rslave "$root/$d"; mounted+=("$root/$d"); }
done

cp /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"

# What a new build machine has before the project touches it.
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive /bin/bash -c '
  set -e
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends gcc g++ make cmake ninja-build libgtest-dev \
    python3 python3-pip git ca-certificates >/dev/null
  update-ca-certificates >/dev/null'

rm -rf "$root/root/libmetaspace"
git clone -q "$repo" "$root/root/libmetaspace"
echo "fresh-debian: make ${targets[*]} in $root/root/libmetaspace ($(git -C "$repo" rev-parse --short HEAD))"
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  CI=true /bin/bash -c "cd /root/libmetaspace && start=\$(date +%s) && l0=\$(cut -d' ' -f1-3 /proc/loadavg) && make ${targets[*]} &&
    echo \"fresh-debian: make ${targets[*]} took \$((\$(date +%s) - start)) s (load at start \$l0, now: \$(cut -d' ' -f1-3 /proc/loadavg))\""
