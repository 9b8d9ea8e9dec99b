#!/usr/bin/env python3
"""Lower bound on footprint/live for a trace whose loaders die in random order.

For every marker of a metaspace trace (docs/trace-format.md), and the end of every run of loader
deaths (deaths-k, where the lab's replay samples too), this prints the least footprint/live
that any allocator can expect there if it does not move memory, gives memory back a page at a
time, and cannot know which loaders will die first (docs/placement-bound.md has the derivation):

  - loaders are grouped in cohorts: those born between two runs of deaths (a wave of a program,
    all loaders of Interleave) die in an order the allocator cannot foresee; loaders of one kind
    in a cohort are taken as alike: b bytes per loader and space (their mean), p = alive / born;
  - a page holding bytes of m loaders stays committed with probability 1 - (1 - p)^m, so a space
    whose loaders hold b bytes each costs at least
        (X / p) * min(f(k) / k, f(k + 1) / X),  X = page / b, k = floor(X), f(m) = 1 - (1 - p)^m
    times its surviving live bytes;
  - the boot loader never dies: its bytes are counted at 1.0;
  - bookkeeping floor: one loader object per live loader, and what remembering the last
    `--remembered` dead handles costs (`--dead-handle` bytes each: the ABI keeps
    MS_ERR_DESTROYED for them), nothing else.

Usage: scripts/placement-bound.py TRACE [--page 4096] [--loader-object 128] [--dead-handle 4]
       [--remembered 1024]
"""

import argparse
import gzip
import math
from collections import defaultdict


def open_trace(path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="ascii", errors="replace")
    return open(path, "rt", encoding="ascii", errors="replace")


def space_ratio(bytes_per_loader, p, page):
    """Least expected committed / surviving live bytes of one space (see the module comment)."""
    if bytes_per_loader <= 0 or p <= 0:
        return 1.0
    x = page / bytes_per_loader
    if x < 1:  # a loader spans pages: its whole pages die with it, only the shared ends count
        return 1.0
    k = math.floor(x)
    q = 1 - p

    def f(m):
        return 1 - q ** m

    return (x / p) * min(f(k) / k, f(k + 1) / x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--page", type=int, default=4096)
    ap.add_argument("--loader-object", type=int, default=128)
    ap.add_argument("--dead-handle", type=int, default=4)
    ap.add_argument("--remembered", type=int, default=1024)
    args = ap.parse_args()

    kind = {}
    cohort_of = {}
    cohort = 0
    deaths_since_birth = False
    held = defaultdict(lambda: [0, 0])  # loader -> [non-class, class] bytes held now
    peak = defaultdict(lambda: [0, 0])  # loader -> the most it held (its size as a loader)
    allocations = {}
    alive = set()
    dead = 0
    points = []  # (label, live, bound, with objects)
    death_runs = 0
    deaths_pending = False

    def point(label):
        live = sum(held[l][0] + held[l][1] for l in alive)
        need = 0.0
        ps = []
        groups = defaultdict(list)
        for l in kind:
            if kind[l] != "boot":
                groups[(cohort_of[l], kind[l])].append(l)
        for (c, k), born in sorted(groups.items()):
            living = [l for l in born if l in alive]
            if not living:
                continue
            p = len(living) / len(born)
            if p < 1:
                ps.append(f"{k[0]}{c} {p:.2f}")
            for s in (0, 1):
                b = sum(peak[l][s] for l in born) / len(born)
                need += sum(held[l][s] for l in living) * space_ratio(b, p, args.page)
        need += sum(held[l][0] + held[l][1] for l in alive if kind[l] == "boot")
        objects = (args.loader_object * sum(1 for l in alive if kind[l] != "boot") +
                   args.dead_handle * min(dead, args.remembered))
        if live > 0:
            ratio, with_objects = need / live, (need + objects) / live
            print(f"{label:<10} {len(alive):>6} {live / 1e6:>9.3f} {ratio:>7.4f} "
                  f"{with_objects:>10.4f}  {', '.join(ps)}")
            points.append((label, live, ratio, with_objects))

    print(f"{'point':<10} {'alive':>6} {'live MB':>9} {'bound':>7} {'+ objects':>10}  p by cohort (s: standard, m: micro) where < 1")
    with open_trace(args.trace) as f:
        for line in f:
            r = line.split()
            if not r or r[0].startswith("#") or r[0] == "metaspace-trace":
                continue
            t = r[0]
            # The end of a run of deaths is a point too (the lab's replay samples the allocators
            # there): at the first record after the run's last death.
            if deaths_pending and t != "D":
                deaths_pending = False
                death_runs += 1
                point(f"deaths-{death_runs}")
            if t == "B":
                if deaths_since_birth:
                    cohort += 1
                    deaths_since_birth = False
                cohort_of[r[1]] = cohort
                kind[r[1]] = r[2]
                alive.add(r[1])
            elif t == "A":
                s = 0 if r[2] == "n" else 1
                b = (int(r[3]) + 7) // 8 * 8
                allocations[(r[1], r[4])] = (s, b)
                held[r[1]][s] += b
                peak[r[1]][s] = max(peak[r[1]][s], held[r[1]][s])
            elif t == "F":
                a = allocations.pop((r[1], r[2]), None)
                if a is not None:
                    held[r[1]][a[0]] -= a[1]
            elif t == "D":
                alive.discard(r[1])
                dead += 1
                deaths_since_birth = True
                deaths_pending = True
            elif t == "M":
                point(r[1])
    if deaths_pending:
        death_runs += 1
        point(f"deaths-{death_runs}")
    # The worst point among those with at least 1 % of the largest live (the lab's rule).
    top = max((p[1] for p in points), default=0)
    judged = [p for p in points if p[1] * 100 >= top]
    if judged:
        worst = max(judged, key=lambda p: p[3])
        print(f"worst: {worst[3]:.4f} with the loader objects, {worst[2]:.4f} without ({worst[0]})")


if __name__ == "__main__":
    main()
