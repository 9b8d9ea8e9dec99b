#!/usr/bin/env python3
"""The page floor of a live metaspace, from the library's per-loader report.

    jcmd PID VM.metaspace show-loaders scale=1 > report.txt
    integrations/hotspot/page_floor.py report.txt

A metaspace that gives memory back when a loader dies cannot put two loaders' blocks on one
page unless it pools them: every loader's arena in a space whose chunks are its own commits at
least its used bytes rounded up to whole pages. Blocks in pooled pages (a row without chunks of
its own, "-") count as their bytes. The floor is the sum; committed above it is what the library
adds: partly used chunks past the last used page, free blocks, and its own bookkeeping.
"""
import re
import sys

ROW = re.compile(r"\|\s*(non-class|class)\s+(\d+) B\s+(\d+) B\s+(\d+) B\s*\|\s*(.*)$")
TOTAL = re.compile(r"^\s+both:\s+(\d+) B\s+(\d+) B\s+(\d+) B\s+(\d+) B\s+(\d+) B\s+(\d+) B", re.M)
PAGE = 4096


def main():
    text = open(sys.argv[1]).read()
    per_loader = text.split("Usage per loader kind:")[0]
    floor = used = own_pages = 0
    loaders = 0
    for line in per_loader.splitlines():
        m = ROW.search(line)
        if not m:
            continue
        u = int(m.group(2))
        used += u
        if m.group(5).strip() == "-":
            floor += u
        else:
            floor += -(-u // PAGE) * PAGE
            own_pages += 1
        loaders += line.lstrip().startswith("0x")
    t = TOTAL.search(text, text.index("Total usage"))
    committed, total_used, overhead = int(t.group(2)), int(t.group(3)), int(t.group(6))
    print(f"loaders {loaders}; arenas with chunks of their own {own_pages}")
    print(f"used {total_used / 2**20:.2f} MiB (per-loader sum {used / 2**20:.2f}), "
          f"committed {committed / 2**20:.2f} MiB, overhead {overhead / 2**20:.2f} MiB")
    print(f"page floor {floor / 2**20:.2f} MiB: floor/used {floor / used:.3f}")
    print(f"committed/used {committed / total_used:.3f}; without overhead "
          f"{(committed - overhead) / total_used:.3f}; committed/floor {committed / floor:.3f}")


if __name__ == "__main__":
    main()
