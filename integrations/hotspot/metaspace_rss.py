#!/usr/bin/env python3
"""Resident memory of the metaspace alone, on both metaspaces of one libjvm.so.

    integrations/hotspot/metaspace_rss.py --jdk JDK [--runs 3] [--at REGEX] -- JAVA_ARGS...

Runs `JDK/bin/java JAVA_ARGS` with -XX:-UseLibMetaspace and -XX:+UseLibMetaspace, alternating,
waits for a line of its standard output that matches REGEX, and then reads /proc/PID/smaps:

- HotSpot's own metaspace: the resident bytes inside the nodes that `jcmd PID VM.metaspace vslist`
  lists (non-class and class space);
- libmetaspace: the resident bytes of the mappings that carry both MAP_NORESERVE and
  MADV_NOHUGEPAGE (smaps' VmFlags `nr` and `nh`): the library maps every range that way (nodes,
  class space, bookkeeping ranges) and HotSpot maps nothing else that way.

Whole-process RSS moves by a few MiB from run to run (compiler arenas, GC structures), more than
the metaspace differs; these figures show the part the flag changes. The process is killed after
the snapshot, so the program should print REGEX at a point worth measuring and may keep running.
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import sys

from compare import process_rss_kib  # this folder's compare.py

VMA = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) ")
NODE = re.compile(r"node #\d+: base (0x[0-9a-f]+): reserved=([\d.]+) KB")


def vmas(pid):
    """(start, end, rss_kib, flags) of every mapping of pid."""
    out, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = VMA.match(line)
            if m:
                cur = [int(m.group(1), 16), int(m.group(2), 16), 0, set()]
                out.append(cur)
            elif line.startswith("Rss:"):
                cur[2] = int(line.split()[1])
            elif line.startswith("VmFlags:"):
                cur[3] = set(line.split()[1:])
    return out


def metaspace_rss_kib(jdk, pid, lib):
    maps = vmas(pid)
    if lib:
        return sum(rss for _, _, rss, flags in maps if {"nr", "nh"} <= flags)
    text = subprocess.run([str(jdk / "bin" / "jcmd"), str(pid), "VM.metaspace", "vslist"],
                          capture_output=True, text=True, check=True).stdout
    nodes = [(int(b, 16), int(b, 16) + int(float(kb) * 1024)) for b, kb in NODE.findall(text)]
    if not nodes:
        raise RuntimeError(f"no nodes in VM.metaspace vslist:\n{text[-1500:]}")
    total = 0
    for start, end, rss, _ in maps:
        if any(start < ne and end > nb for nb, ne in nodes):
            if not any(nb <= start and end <= ne for nb, ne in nodes):
                raise RuntimeError(f"mapping {start:#x}-{end:#x} straddles a metaspace node")
            total += rss
    return total


def one_run(jdk, args, at, lib):
    cmd = [str(jdk / "bin" / "java"), "-XX:+UseLibMetaspace" if lib else "-XX:-UseLibMetaspace", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in p.stdout:
            if re.search(at, line):
                return metaspace_rss_kib(jdk, p.pid, lib), process_rss_kib(p.pid)
        raise RuntimeError(f"{' '.join(cmd)} ended before printing a line matching {at!r}")
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jdk", required=True, type=pathlib.Path, help="the JDK whose libjvm.so build.sh made")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--at", default="READY", help="snapshot when the program prints a line matching this")
    ap.add_argument("args", nargs="+", help="after --: java's arguments")
    a = ap.parse_args()
    res = {False: [], True: []}
    for _ in range(a.runs):
        for lib in (False, True):
            res[lib].append(one_run(a.jdk, a.args, a.at, lib))
    print(f"program: java {' '.join(a.args)[:100]}; snapshot at /{a.at}/; {a.runs} alternating runs")
    print("| metaspace | metaspace RSS (MiB), median [min-max] | process RSS (MiB), median [min-max] |")
    print("|---|---|---|")
    for lib, name in ((False, "HotSpot's own"), (True, "libmetaspace")):
        ms = [m / 1024 for m, _ in res[lib]]
        tot = [t / 1024 for _, t in res[lib]]
        print(f"| {name} | {statistics.median(ms):.2f} [{min(ms):.2f}-{max(ms):.2f}] "
              f"| {statistics.median(tot):.1f} [{min(tot):.1f}-{max(tot):.1f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
