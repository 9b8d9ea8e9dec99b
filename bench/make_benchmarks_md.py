#!/usr/bin/env python3
"""Writes BENCHMARKS.md from the Google Benchmark JSON files of one scripts/bench.sh run.

Standard library only. Besides the JSON it reads the machine description from /proc, counts the
instructions of the inline fast path in the bench_metaspace binary (objdump), profiles missed
allocation targets with callgrind when valgrind is installed, and includes the lab's headline
output and the hand-written analysis (bench/analysis.md) when they exist.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

BACKENDS = ["metaspace", "glibc", "mimalloc", "jemalloc", "jemalloc_tc"]
COMPETITORS = BACKENDS[1:]
BACKEND_NOTES = {
    "metaspace": "libmetaspace, inline `ms_allocate`, loader = `ms_loader_create` / `ms_loader_destroy`",
    "glibc": "glibc malloc + two-word header per block linking it into the loader's list; "
             "loader death frees the blocks one by one",
    "mimalloc": "mimalloc 2 heap per loader: `mi_heap_malloc`, `mi_heap_destroy`",
    "jemalloc": "jemalloc 5 arena per loader (`arenas.create`), `mallocx(MALLOCX_ARENA | "
                "MALLOCX_TCACHE_NONE)`, `arena.<i>.destroy`",
    "jemalloc_tc": "the same with an explicit tcache per loader (`tcaches.create`, "
                   "`MALLOCX_TCACHE(tc)`), destroyed with the loader: jemalloc's usual fast path",
}

# (operation, label, unit). The unit says how a row's figure is read.
ROWS = [
    ("alloc/8", "allocate 8 B, warm", "ns/block"),
    ("alloc/16", "allocate 16 B, warm", "ns/block"),
    ("alloc/32", "allocate 32 B, warm", "ns/block"),
    ("alloc/64", "allocate 64 B, warm", "ns/block"),
    ("alloc/mix", "allocate, workload size mix, warm", "ns/block"),
    ("alloc_notouch/16", "allocate 16 B, warm, block not written", "ns/block"),
    ("alloc_notouch/mix", "allocate, size mix, warm, blocks not written", "ns/block"),
    ("alloc_cold/16", "allocate 16 B, fresh memory (first-touch faults)", "ns/block"),
    ("alloc_cold/mix", "allocate, size mix, fresh memory (first-touch faults)", "ns/block"),
    ("free", "premature deallocation (size mix)", "ns/block"),
    ("reuse", "allocate again from the freed blocks", "ns/block"),
    ("chunk_turnover", "64 KiB requests, micro loader: a new chunk for each", "ns/block"),
    ("loader_empty", "loader create + destroy, empty", "ns/loader"),
    ("loader_1000", "loader create + 1 000 blocks + destroy", "ns/loader"),
    ("destroy_1000", "loader destroy holding 1 000 blocks", "ns/loader"),
    ("uncommit_300MiB", "300 MiB of loaders die, memory back to the kernel", "MiB/ms"),
    ("stats/10_loaders", "statistics snapshot, 10 live loaders", "ns/snapshot"),
    ("stats/1000_loaders", "statistics snapshot, 1 000 live loaders", "ns/snapshot"),
    ("dealloc_by_age/oldest", "deallocate a block in the oldest chunks of a 1 GiB loader", "ns/block"),
    ("dealloc_by_age/newest", "deallocate a block in the newest chunk of a 1 GiB loader", "ns/block"),
    ("usage/10000_micro_loaders", "`ms_get_usage`, 10 000 live micro loaders", "ns/call"),
    ("usage/1000000_micro_loaders", "`ms_get_usage`, 1 M live micro loaders", "ns/call"),
    ("stats/10000_micro_loaders", "`ms_get_stats`, 10 000 live micro loaders", "ns/snapshot"),
    ("stats/1000000_micro_loaders", "`ms_get_stats`, 1 M live micro loaders", "ns/snapshot"),
    ("purge/1000000_micro_loaders", "`ms_purge`, 1 M live micro loaders, nothing to return", "ns/call"),
    ("purge_after_death/1000000_micro_loaders", "`ms_purge` after 1 M micro loaders died", "ns/call"),
    ("threads_own/mix/threads:1", "1 thread, own loader, size mix", "ns/block (wall, all threads)"),
    ("threads_own/mix/threads:2", "2 threads, own loaders, size mix", "ns/block (wall, all threads)"),
    ("threads_shared/mix/threads:1", "1 thread, shared loader, size mix", "ns/block (wall, all threads)"),
    ("threads_shared/mix/threads:2", "2 threads, one shared loader, size mix", "ns/block (wall, all threads)"),
    ("threads_shared/mix/threads:4", "4 threads, one shared loader, size mix (oversubscribes 2 cores)",
     "ns/block (wall, all threads)"),
]

METHOD = """## Method

- Sources: bench/bench_common.hpp (every benchmark, written once against a small backend interface, so
  all allocators run the same request sequences), bench/bench_metaspace.cpp (libmetaspace, glibc),
  bench/bench_mimalloc.cpp, bench/bench_jemalloc.cpp: one executable per allocator family, because
  linking mimalloc or jemalloc replaces malloc in the whole process.
- Requests are generated before timing (seeded): fixed sizes, or the size mix of
  docs/workload-model.md: one class-space Klass of 66–100 words per ≈ 38 allocations, the rest
  38 % ≤ 8 words, 45 % 9–16, 8 % 17–40, 9 % 41–130 (mean ≈ 17 words).
- The first word of every block is written (a runtime initializes what it allocates; it is also what
  makes fresh memory fault in). `alloc_notouch` rows leave the blocks alone: the allocator's own cost.
- Time is the CPU time of the measuring thread around the timed loop only (loader creation and
  destruction between batches are outside it unless the row is about them). The machine is shared, and
  wall time would charge other processes' time slices to the allocator; page faults are kernel time of
  the faulting thread and so are included. Thread rows are wall time of the whole run ÷ all blocks
  of all threads (aggregate throughput; equal figures at 1 and 2 threads mean no scaling).
- Warm rows: a long-lived loader (replaced every 4 MiB, untimed) after a warm-up that allocated and freed
  32 MiB twice, so the memory is already faulted in — except for jemalloc, whose `arena.<i>.destroy` hands
  each loader's memory back, so every new arena faults again (visible in the fault table).
- Fresh-memory rows (`alloc_cold`): 64 batches, each into a new loader, none freed until the end, each
  benchmark in a process of its own: every allocator has to take new pages from the kernel, as a
  runtime does while it starts up.
- Thread rows use a fixed number of batches per thread (the shared loader cannot be replaced mid-run),
  so they too run partly on fresh memory beyond what the warm-up faulted in."""

WARM_ALLOC = ["alloc/8", "alloc/16", "alloc/32", "alloc/64"]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def op_key(run_name):
    """'metaspace/alloc/16/manual_time' -> ('metaspace', 'alloc/16'); thread counts are kept."""
    parts = run_name.split("/")
    backend = parts[0]
    rest = [p for p in parts[1:] if p not in ("manual_time", "real_time") and not p.startswith(("iterations:", "repeats:"))]
    return backend, "/".join(rest)


def load_results(results_dir):
    """{backend: {op: {"value": figure, "faults": per 1 000 blocks, "returned": MiB}}} and contexts."""
    return load_results_files([os.path.join(results_dir, n) for n in sorted(os.listdir(results_dir))
                               if n.endswith(".json")])


def load_results_files(paths):
    """load_results over the given JSON files."""
    table, contexts = {}, {}
    for path in paths:
        name = os.path.basename(path)
        with open(path) as f:
            data = json.load(f)
        contexts[name] = data.get("context", {})
        by_run = {}
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                backend, op = op_key(b.get("run_name", b["name"]))
                table.setdefault(backend, {})[op] = {"error": b.get("error_message", "error")}
                continue
            # With repetitions, the median; a single run stands for itself.
            agg = b.get("aggregate_name")
            if agg not in (None, "median"):
                continue
            run = b.get("run_name", b["name"])
            if agg is None and run in by_run:
                continue
            by_run[run] = b
        for run, b in by_run.items():
            backend, op = op_key(run)
            scale = UNIT_NS[b.get("time_unit", "ns")]
            per_iter = b.get("blocks_per_iter", 1.0) or 1.0
            manual_or_wall = "/manual_time" in b["name"] or "/real_time" in b["name"]
            t = (b["real_time"] if manual_or_wall else b["cpu_time"]) * scale / per_iter
            entry = {"value": t, "faults": b.get("faults_per_kblock"), "raw": b}
            if op.startswith("uncommit"):
                entry = {"value": b.get("MiB_per_ms", 0.0), "returned": b.get("returned_MiB"),
                         "ms": b["real_time"] * scale / 1e6}
            table.setdefault(backend, {})[op] = entry
    return table, contexts


def machine():
    cpu, cores = "?", os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return cpu, cores, platform.release(), mem


def fmt(v, unit):
    if v is None:
        return "–"
    if unit == "MiB/ms":
        return f"{v:.2f}"
    if v >= 100000:
        return f"{v / 1000:,.0f} µs"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def figure(table, backend, op):
    e = table.get(backend, {}).get(op)
    return None if e is None or "error" in e else e["value"]


def ratio(table, competitor, op, unit):
    """How many times metaspace is faster than the competitor (> 1: metaspace wins)."""
    m, c = figure(table, "metaspace", op), figure(table, competitor, op)
    if m is None or c is None or m <= 0 or c <= 0:
        return None
    return m / c if unit == "MiB/ms" else c / m


def main_table(table):
    present = [b for b in BACKENDS if b in table]
    comps = [c for c in COMPETITORS if c in table]
    head = ["operation", "unit"] + present + [f"× vs {c}" for c in comps] + ["faults / 1 000 blocks (metaspace)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op, label, unit in ROWS:
        cells = [f"{label} (`{op}`)", unit]
        for b in present:
            e = table.get(b, {}).get(op)
            cells.append("error" if e and "error" in e else fmt(figure(table, b, op), unit))
        for c in comps:
            r = ratio(table, c, op, unit)
            cells.append("–" if r is None else f"{r:.2f}" if r >= 0.1 else f"{r:.3f}" if r >= 0.001 else f"{r:.1e}")
        f = table.get("metaspace", {}).get(op, {}).get("faults")
        cells.append("–" if f is None or unit == "MiB/ms" else f"{f:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def faults_table(table):
    present = [b for b in BACKENDS if b in table]
    lines = ["| operation | " + " | ".join(present) + " |", "|---|" + "---|" * len(present)]
    for op in ["alloc/16", "alloc/mix", "alloc_cold/16", "alloc_cold/mix", "threads_own/mix/threads:1"]:
        cells = []
        for b in present:
            f = table.get(b, {}).get(op, {}).get("faults")
            cells.append("–" if f is None else f"{f:.1f}")
        lines.append(f"| `{op}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def uncommit_table(table):
    present = [b for b in BACKENDS if b in table]
    lines = ["| backend | RSS returned (MiB) | time (ms) | MiB/ms |", "|---|---|---|---|"]
    for b in present:
        e = table[b].get("uncommit_300MiB")
        if not e or "error" in e:
            continue
        lines.append(f"| {b} | {e['returned']:.0f} | {e['ms']:.1f} | {e['value']:.2f} |")
    return "\n".join(lines)


def targets(table, rounds=None):
    """[(text, met or None)]: the fast-path targets (the side-by-side ones when rounds were run)."""
    out = []

    def fig(op):
        # The best of the side-by-side rounds where they measured the row, else the median above.
        best = side_best(rounds, "metaspace", op) if rounds else None
        return best if best is not None else figure(table, "metaspace", op)

    how = f" (best of {len(rounds)} side-by-side rounds)" if rounds else ""
    fixed = [(op, fig(op)) for op in WARM_ALLOC]
    fixed = [(op, v) for op, v in fixed if v is not None]
    mix = fig("alloc/mix")
    notouch = {op: figure(table, "metaspace", op) for op in ("alloc_notouch/16", "alloc_notouch/mix")}
    if fixed:
        worst = max(fixed, key=lambda x: x[1])
        extra = "" if notouch["alloc_notouch/16"] is None else \
            f"; without writing the block: 16 B {notouch['alloc_notouch/16']:.2f} ns"
        out.append((f"Fast path ≤ 3 ns per block, 8–64 B, block written{how}: worst {worst[1]:.2f} ns (`{worst[0]}`); "
                    + ", ".join(f"{op.split('/')[1]} B {v:.2f}" for op, v in fixed) + extra, worst[1] <= 3.0))
    if mix is not None:
        extra = "" if notouch["alloc_notouch/mix"] is None else \
            f"; without writing the blocks {notouch['alloc_notouch/mix']:.2f} ns"
        out.append((f"Fast path ≤ 3 ns per block, workload size mix{how}: {mix:.2f} ns (`alloc/mix`){extra}",
                    mix <= 3.0))
    for comp, need, what in (("glibc", 2.0, "≥ 2× faster than glibc malloc"),
                             ("mimalloc", 1.0, "at least as fast as mimalloc heap allocation")):
        if comp == "mimalloc" and rounds:
            continue  # judged side by side below, against the stricter 1.3×
        rs = [(op, ratio(table, comp, op, "ns")) for op in WARM_ALLOC + ["alloc/mix"]]
        rs = [(op, r) for op, r in rs if r is not None]
        if not rs:
            out.append((f"{what}: {comp} not measured", None))
            continue
        worst = min(rs, key=lambda x: x[1])
        out.append((f"{what}: {comp} ÷ metaspace ≥ {need:g} on every warm allocation row; lowest "
                    f"{worst[1]:.2f}× (`{worst[0]}`); " + ", ".join(f"`{op}` {r:.2f}×" for op, r in rs),
                    worst[1] >= need))
    if rounds:
        n = len(rounds)
        rs = [(op, side_best(rounds, "mimalloc", op), side_best(rounds, "metaspace", op))
              for op in ("alloc/8", "alloc/16", "alloc/32", "alloc/64", "alloc/mix")]
        rs = [(op, c / m) for op, c, m in rs if c and m]
        if rs:
            worst = min(rs, key=lambda x: x[1])
            out.append((f"Fast path ≥ 1.3× mimalloc's `mi_heap_malloc` on every size row, block written, side "
                        f"by side (best of {n} alternating rounds each): lowest {worst[1]:.2f}× (`{worst[0]}`); "
                        + ", ".join(f"`{op}` {r:.2f}×" for op, r in rs), worst[1] >= 1.3))
        # The 8 ns were set when mimalloc took 2.5 ns (free) and 2.8 ns (reuse) on this machine; the
        # machine's speed moves by 1.5x from hour to hour, so the line also gives the ratio to
        # mimalloc in the same rounds beside the one the 8 ns stood for. The verdict stays the 8 ns.
        for op, what, mi_then in (("free", "Premature free", 2.5), ("reuse", "Reuse of a freed block", 2.8)):
            v = side_best(rounds, "metaspace", op)
            if v is not None:
                mi = side_best(rounds, "mimalloc", op)
                rel = "" if not mi else (f"; {v / mi:.2f}× mimalloc's time in the same rounds (8 ns was "
                                         f"{8.0 / mi_then:.1f}× mimalloc's {mi_then} ns when the target was set)")
                out.append((f"{what} ≤ 8 ns per block (size mix, best of {n} rounds): {v:.2f} ns (`{op}`); "
                            f"mimalloc {mi or float('nan'):.2f} ns{rel}", v <= 8.0))
        # This benchmark runs at one of two levels on the shared machine, and the level moves with time,
        # within a process too (bench/analysis.md, 09:11 and 11:47 runs of 2026-11-27): the rounds, each
        # a process of its own minutes apart, judge it as they judge reuse.
        rs = [(op, side_best(rounds, "metaspace_shared", op)) for op in ("alloc/16", "alloc/mix")]
        rs = [(op, v) for op, v in rs if v is not None]
        if rs:
            worst = max(rs, key=lambda x: x[1])
            out.append((f"One shared loader, one thread ≤ 10 ns per block, block written (best of {n} rounds): "
                        f"worst {worst[1]:.2f} ns (`{worst[0]}`); "
                        + ", ".join(f"`{op}` {v:.2f}" for op, v in rs), worst[1] <= 10.0))
    r = ratio(table, "glibc", "destroy_1000", "ns")
    if r is not None:
        out.append((f"Loader destroy with 1 000 blocks ≥ 10× faster than glibc one-by-one free: "
                    f"{figure(table, 'glibc', 'destroy_1000'):,.0f} ns ÷ "
                    f"{figure(table, 'metaspace', 'destroy_1000'):,.0f} ns = {r:.1f}×", r >= 10.0))
    return out


def scale_table(table):
    ms = table.get("metaspace", {})
    rows = []
    for op, label, unit in ROWS:
        if not op.startswith(("dealloc_by_age", "usage/", "stats/10000_", "stats/1000000_", "purge")):
            continue
        e = ms.get(op)
        if not e or "error" in e:
            continue
        raw = e.get("raw", {})
        peak = raw.get("peak_rss_extra_KiB")
        extra = f"{peak / 1024:.1f} MiB" if peak is not None and peak >= 0 else "–"
        returned = raw.get("returned_MiB")
        if returned is not None:
            extra = f"{returned:,.0f} MiB returned"
        shown = fmt(e['value'], unit)
        rows.append(f"| {label} | {shown}{'' if shown.endswith('µs') else ' ' + unit} | {extra} |")
    old, new = figure(table, "metaspace", "dealloc_by_age/oldest"), figure(table, "metaspace", "dealloc_by_age/newest")
    if old and new:
        rows.append(f"| oldest ÷ newest (target ≤ 1.5) | {old / new:.2f} | |")
    if not rows:
        return None
    return "\n".join(["| operation | time | peak RSS added / returned |", "|---|---|---|"] + rows)


def heap_states(table):
    """glibc aged by the warm-up (the `glibc` column) against glibc after one large request."""
    lines = []
    for op in ("alloc/8", "alloc/16", "alloc/32", "alloc/64", "alloc/mix"):
        ms, aged, clean = (figure(table, b, op) for b in ("metaspace", "glibc", "glibc_clean"))
        if ms is None or aged is None or clean is None:
            continue
        lines.append(f"| `{op}` | {ms:.2f} | {aged:.2f} | {clean:.2f} | {aged / ms:.2f} | {clean / ms:.2f} |")
    if not lines:
        return None
    return "\n".join(["| operation | metaspace ns/block | glibc aged ns/block | glibc clean ns/block | "
                      "× vs aged | × vs clean |", "|---|---|---|---|---|---|"] + lines)


def shared_loader_table(table, rounds=None):
    """One MS_LOADER_SHARED loader used by one thread, against an own loader, same run; with the
    side-by-side rounds, the best of them too (scripts/bench.sh runs the allocation rows there)."""
    lines = []
    for op, what in (("alloc/16", "allocate 16 B, warm"), ("alloc/mix", "allocate, size mix, warm"),
                     ("free", "premature deallocation (size mix)"), ("reuse", "allocate again from freed blocks")):
        own, shared = figure(table, "metaspace", op), figure(table, "metaspace_shared", op)
        if own is None or shared is None:
            continue
        best = side_best(rounds, "metaspace_shared", op) if rounds else None
        lines.append(f"| {what} (`{op}`) | {own:.2f} | {shared:.2f} | "
                     + (f"{best:.2f} |" if best is not None else "– |"))
    if not lines:
        return None
    n = len(rounds) if rounds else 0
    return "\n".join(["| operation | own loader ns/block | shared loader, one thread ns/block | "
                      f"shared loader, best of {n} side-by-side rounds |", "|---|---|---|---|"] + lines)


SIDE_ROWS = ["alloc/8", "alloc/16", "alloc/32", "alloc/64", "alloc/mix", "free", "reuse"]


def load_side_by_side(results_dir):
    """The alternating rounds of scripts/bench.sh (results/side/<exe>.<round>.json): for each round
    {backend: {op: ns}}, and each round's load average. None without rounds."""
    side = os.path.join(results_dir, "side")
    if not os.path.isdir(side):
        return None
    rounds = {}
    for name in sorted(os.listdir(side)):
        m = re.match(r"(bench_\w+)\.(\d+)\.json$", name)
        if not m:
            continue
        one, ctx = load_results_files([os.path.join(side, name)])
        entry = rounds.setdefault(int(m.group(2)), {"table": {}, "load": []})
        for backend, ops in one.items():
            entry["table"].setdefault(backend, {}).update(ops)
        load = next(iter(ctx.values()), {}).get("load_avg")
        if load:
            entry["load"].append(load[0])
    return [rounds[k] for k in sorted(rounds)] or None


def side_best(rounds, backend, op):
    vals = [figure(r["table"], backend, op) for r in rounds]
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def side_ratios(rounds, op):
    """mimalloc ÷ metaspace within each round (both measured seconds apart)."""
    out = []
    for r in rounds:
        m, c = figure(r["table"], "metaspace", op), figure(r["table"], "mimalloc", op)
        if m and c:
            out.append(c / m)
    return out


def side_by_side_table(rounds):
    lines = ["| operation | metaspace best ns/block | mimalloc best ns/block | × (best ÷ best) | "
             "× per round: median (min–max) |", "|---|---|---|---|---|"]
    for op in SIDE_ROWS:
        m, c = side_best(rounds, "metaspace", op), side_best(rounds, "mimalloc", op)
        if m is None or c is None:
            continue
        rs = sorted(side_ratios(rounds, op))
        med = rs[len(rs) // 2] if rs else None
        spread = f"{med:.2f} ({rs[0]:.2f}–{rs[-1]:.2f})" if rs else "–"
        lines.append(f"| `{op}` | {m:.2f} | {c:.2f} | {c / m:.2f} | {spread} |")
    return "\n".join(lines)


def counter_cost(table, rounds=None):
    """Library against the bench-local copy with the counter: best of the side-by-side rounds
    when they ran (both rows in each round, seconds apart), else the medians above."""
    lines = []
    for op in ("alloc/8", "alloc/16", "alloc/64", "alloc/mix"):
        if rounds and side_best(rounds, "metaspace_counted", op) is not None:
            without, with_c = side_best(rounds, "metaspace", op), side_best(rounds, "metaspace_counted", op)
        else:
            without, with_c = figure(table, "metaspace", op), figure(table, "metaspace_counted", op)
        if with_c is None or without is None:
            continue
        lines.append(f"| `{op}` | {without:.2f} | {with_c:.2f} | {with_c - without:+.2f} |")
    if not lines:
        return None
    return "\n".join(["| operation | ns/block, library (no counter) | with the counter (bench-local copy) | "
                      "difference |",
                      "|---|---|---|---|"] + lines)


def disassemble(binary, symbol):
    """(instructions up to the first ret, all instructions, listing) of one function."""
    if not shutil.which("objdump") or not os.path.exists(binary):
        return None
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", binary],
                             capture_output=True, text=True, check=True).stdout
    except subprocess.CalledProcessError:
        return None
    insns = []
    for line in out.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S.*)$", line)
        if m:
            insns.append(re.sub(r"\s+", " ", m.group(2)).strip())
    if not insns:
        return None
    fast = next((i + 1 for i, s in enumerate(insns) if s.startswith("ret")), len(insns))
    return fast, len(insns), insns


def callgrind(binary, bench_filter, toggle, workdir):
    """Instructions per block and the hottest functions of the timed loop, or None."""
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate") or not os.path.exists(binary):
        return None
    out = os.path.join(workdir, "callgrind." + re.sub(r"[^A-Za-z0-9]+", "_", bench_filter) + ".out")
    cmd = ["valgrind", "--tool=callgrind", f"--toggle-collect={toggle}", f"--callgrind-out-file={out}",
           binary, f"--benchmark_filter={bench_filter}", "--benchmark_min_time=0.01",
           "--benchmark_format=json"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        runs = [b for b in json.loads(res.stdout).get("benchmarks", [])]
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=calling", out],
                             capture_output=True, text=True, check=True).stdout
    except (subprocess.SubprocessError, json.JSONDecodeError, OSError):
        return None
    # Total collected instructions, and how many timed batches (calls of the toggled function).
    total = None
    m = re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", ann, re.M)
    if m:
        total = int(m.group(1).replace(",", ""))
    # Timed batches: the calls of the toggled function, as the caller tree lists them ("(7x)").
    toggle_re = re.compile(re.escape(toggle.strip("*")))
    calls = sum(int(m.group(2).replace(",", "")) for m in
                re.finditer(r"^\s*[\d,]+ \(\s*[\d.]+%\)\s+>\s+(.*) \(([\d,]+)x\)", ann, re.M)
                if toggle_re.search(m.group(1)))
    iterations = sum(b.get("iterations", 0) for b in runs)
    blocks = runs[0].get("blocks_per_iter", 1) if runs else 1
    # The hottest functions below the timed loop, inclusive.
    hot = []
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+\*\s+(.*?) \[", line)
        if m and re.search(r"metaspace::|\bms_|pthread_mutex|malloc|free|operator (new|delete)", m.group(3)) \
                and "bench::" not in m.group(3):
            hot.append((int(m.group(1).replace(",", "")), float(m.group(2)), m.group(3)))
    hot = sorted({h[2]: h for h in hot}.values(), reverse=True)[:12]
    # Callgrind counts calls also where it does not collect (the warm-up, loader replacement), so
    # the count of ms_allocate_slow calls is not the loop's; their collected cost is.
    slow_cost = sum(int(x.group(1).replace(",", "")) for x in
                    re.finditer(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+>\s+\S*ms_allocate_slow \([\d,]+x\)",
                                ann, re.M))
    return {"total": total, "batches": calls, "iterations": iterations, "blocks": blocks,
            "hot": hot, "slow_cost": slow_cost, "cmd": " ".join(cmd)}


def profile_section(table, build, workdir, enabled):
    binary = os.path.join(build, "bench", "bench_metaspace")
    wanted = []
    for op in WARM_ALLOC + ["alloc/mix"]:
        v = figure(table, "metaspace", op)
        beaten = any((ratio(table, c, op, "ns") or 2.0) < (2.0 if c == "glibc" else 1.0)
                     for c in ("glibc", "mimalloc"))
        if v is not None and (v > 3.0 or beaten):
            wanted.append(op)
    # The worst fixed size and the mix are enough to see where the time goes.
    fixed = [op for op in wanted if op != "alloc/mix"]
    picks = ([max(fixed, key=lambda op: figure(table, "metaspace", op))] if fixed else []) + \
            (["alloc/mix"] if "alloc/mix" in wanted else [])
    r = ratio(table, "glibc", "destroy_1000", "ns")
    parts = []
    if not picks and (r is None or r >= 10):
        return "Every measured target is met; nothing was profiled."
    if not enabled:
        return "Profiling was skipped (`--no-profile`)."
    for op in picks:
        p = callgrind(binary, f"^metaspace/{op}/", "*alloc_batch*", workdir)
        if p is None or not p["total"] or not p["batches"]:
            parts.append(f"`{op}`: callgrind not available or the run failed.")
            continue
        blocks = p["batches"] * p["blocks"]
        per_block = p["total"] / blocks
        rows = "\n".join(f"| {h[2]} | {h[0] / blocks:.1f} | {h[1]:.1f} % |" for h in p["hot"])
        parts.append(
            f"#### `metaspace/{op}` under callgrind\n\n"
            f"`{p['cmd']}`\n\n"
            f"Collected inside the timed loop only (`alloc_batch`, {p['batches']} batches of "
            f"{p['blocks']:.0f} blocks): **{per_block:.1f} instructions per block** including the loop and "
            f"the write of the first word, of which **{p['slow_cost'] / blocks:.1f} in `ms_allocate_slow`** "
            "(how often the loop leaves the fast path is the `slow_path_share` table's figure: callgrind "
            "also counts the calls made outside the collected loop).\n\n"
            "| function (inclusive, below the loop) | instructions per block | share |\n|---|---|---|\n" + rows)
    if r is not None and r < 10:
        p = callgrind(binary, "^metaspace/destroy_1000/", "*destroy_batch*", workdir)
        if p and p["total"] and p["batches"]:
            loaders = p["batches"] * p["blocks"]
            rows = "\n".join(f"| {h[2]} | {h[0] / loaders:,.0f} | {h[1]:.1f} % |" for h in p["hot"])
            parts.append(f"#### `metaspace/destroy_1000` under callgrind\n\n`{p['cmd']}`\n\n"
                         f"{p['total'] / loaders:,.0f} instructions per loader destroyed.\n\n"
                         "| function (inclusive) | instructions per loader | share |\n|---|---|---|\n" + rows)
    return "\n\n".join(parts)


def lab_section(results_dir, build):
    lab = os.path.join(build, "tools", "lab", "metaspace-lab")
    parts = []
    for name, title in (("lab-interleaved.txt", "`metaspace-lab compare interleaved --spike --brief`"),
                        ("lab-spikes.txt", "`metaspace-lab compare spikes --brief`")):
        path = os.path.join(results_dir, name)
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().rstrip()
            parts.append(f"### {title}\n\n```\n{text}\n```")
    if parts:
        return "\n\n".join(parts)
    return ("> **Placeholder.** The lab (`" + lab + "`) was not built when this file was generated, so its "
            "elasticity tables are missing here. `make bench` fills this section by itself once "
            "`metaspace-lab` exists: scripts/bench.sh runs `compare interleaved --spike` and "
            "`compare spikes` and this script copies their output in.")


def footprint_section(results_dir):
    """Micro-loader footprint against the mallocs, and the 1 M round trip
    (bench/bench_footprint.cpp, one process per line of footprint.jsonl)."""
    path = os.path.join(results_dir, "footprint.jsonl")
    if not os.path.exists(path):
        return None
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    micro = [r for r in rows if r.get("mode") == "micro"]
    trips = [r for r in rows if r.get("mode") == "roundtrip"]
    out = []
    if micro:
        n = micro[0]["loaders"]
        glibc = next((r["rss_per_loader"] for r in micro if r["allocator"] == "glibc"), None)
        out += [f"{n:,} micro loaders (one 528-byte Klass + 20 non-class blocks, "
                f"{micro[0]['live_per_loader']} bytes live each), each allocator in its own process. "
                "Footprint: libmetaspace's committed (chunks + bookkeeping overhead); for the mallocs, RSS.",
                "", "| allocator | RSS per loader | × glibc | RSS/live | footprint/live | "
                "RSS/live after 4/5 died | footprint/live after 4/5 died | of which overhead |",
                "|---|---|---|---|---|---|---|---|"]
        for r in micro:
            x = f"{r['rss_per_loader'] / glibc:.2f}" if glibc else "–"
            out.append(f"| {r['allocator']} | {r['rss_per_loader']:,.0f} B | {x} | {r['rss_over_live']:.2f} | "
                       f"{r['footprint_over_live']:.2f} | {r['rss_over_live_after_4of5']:.2f} | "
                       f"{r['footprint_over_live_after_4of5']:.2f} | "
                       f"{r.get('overhead_over_live_after_4of5', 0):.2f} |")
        out += ["", "The mallocs keep freed memory for reuse (RSS does not fall after the deaths); libmetaspace "
                "returns it on `ms_purge`. Without moving memory, 4 KiB granules bound footprint/live after 4/5 "
                "random deaths from below at about 2.75 (docs/micro-loader-bound.md).", ""]
    for r in trips:
        mib = 1 << 20
        out += [f"Round trip, {r['loaders']:,} micro loaders created, destroyed in creation order, "
                f"`ms_purge`: RSS {r['rss_live_above_start'] / mib:,.1f} MiB above the start while live, "
                f"**{r['rss_purged_above_start'] / mib:.2f} MiB** after the purge (committed, all overhead: "
                f"{r['footprint_purged'] / mib:.2f} MiB); after `ms_destroy` "
                f"**{r['rss_destroyed_above_before_create'] / mib:.2f} MiB** above before `ms_create`.", ""]
    return "\n".join(out)


def format_load(load):
    """Google Benchmark's load_avg list as "1.33, 2.34, 2.79"; '?' if the context has none."""
    if not load:
        return "?"
    return ", ".join(f"{x:.2f}" for x in load)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", required=True, help="folder with the JSON files of one run")
    ap.add_argument("--build", default="build/release", help="build folder with bench/ (and tools/lab/)")
    ap.add_argument("--command", default="make bench", help="the command to print as how to reproduce")
    ap.add_argument("--analysis", default=os.path.join(os.path.dirname(__file__), "analysis.md"))
    ap.add_argument("--no-profile", action="store_true", help="do not run callgrind on missed targets")
    ap.add_argument("--out", default="BENCHMARKS.md")
    args = ap.parse_args()

    table, contexts = load_results(args.results)
    if "metaspace" not in table:
        sys.exit("no metaspace results in " + args.results)
    cpu, cores, kernel, mem = machine()
    ctx = next(iter(contexts.values()), {})
    probe = disassemble(os.path.join(args.build, "bench", "bench_metaspace"), "ms_bench_probe_allocate")
    probe88 = disassemble(os.path.join(args.build, "bench", "bench_metaspace"), "ms_bench_probe_allocate_88")

    md = ["# Benchmarks", "",
          "Generated by `bench/make_benchmarks_md.py` from one run of `scripts/bench.sh`; do not edit by "
          "hand (the hand-written part is bench/analysis.md, included below).", "",
          "## Machine and command", "",
          f"- CPU: {cpu}, {cores} cores; {mem} RAM; Linux {kernel}",
          f"- Load average at the start of the run (1, 5, 15 minutes): {format_load(ctx.get('load_avg'))}; "
          "the machine is shared, "
          "so the figures are CPU time of the measuring thread (see Method)",
          f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
          f"- Command: `{args.command}` (runs `scripts/bench.sh`: every executable of "
          f"{args.build}/bench with `--benchmark_repetitions` and JSON output, medians reported)",
          f"- Google Benchmark reports its library as a `{ctx.get('library_build_type', '?')}` build (Debian's "
          "package); it only drives the loops, every timed region is code of bench/ built with the release flags",
          "", "Backends:", ""]
    md += [f"- **{b}**: {BACKEND_NOTES[b]}" for b in BACKENDS if b in table]
    md += ["", METHOD, "", "## Targets", ""]
    rounds = load_side_by_side(args.results)
    for text, met in targets(table, rounds):
        md.append(f"- **{'met' if met else 'MISSED' if met is not None else 'n/a'}** — {text}")
    md += ["", "## Results", "",
           "Median of the repetitions. `× vs X` = X's figure ÷ metaspace's (for MiB/ms the inverse): above 1 "
           "libmetaspace is faster. Competitors that have no equivalent show –.", "", main_table(table), ""]
    if rounds:
        loads = [l for r in rounds for l in r["load"]]
        md += ["### Side by side with mimalloc", "",
               f"The rows above are medians of runs minutes apart per allocator. Here `bench_metaspace` and "
               f"`bench_mimalloc` ran the warm allocation, free and reuse rows alternately, {len(rounds)} rounds "
               f"(1-minute load average {min(loads):.1f}–{max(loads):.1f} across them), so both allocators "
               "met the same neighbours (the shared loader's allocation rows ran in the same rounds: "
               "its table below); best of the rounds, and the spread of the per-round ratio:" if loads else
               f"`bench_metaspace` and `bench_mimalloc` alternately, {len(rounds)} rounds:",
               "", side_by_side_table(rounds), ""]
    cc = counter_cost(table, rounds)
    if cc:
        md += ["### Cost of the statistics counter on the fast path", "",
               "The inline fast path no longer counts blocks (per-loader allocation counts are kept only "
               "with `count_allocations=1` or checked mode, which close the inline path). "
               "`metaspace_counted` is a copy of `ms_allocate` in the benchmark with the per-block "
               "counter store it used to have and nothing else changed (handle check and `fit_max` "
               "check kept), run in the same process" + (", best of the side-by-side rounds above:" if rounds
                                                        else ":"),
               "", cc, ""]
    hs = heap_states(table)
    if hs:
        md += ["### glibc in both heap states", "",
               "The `glibc` column above is glibc's heap *aged* by the warm-up (32 MiB of the size mix "
               "allocated and freed twice, plus every benchmark before it in the process): small requests "
               "search and split scattered free chunks. `glibc_clean` runs the same warm-up, then one "
               "unrelated 64 KiB request, after which glibc has consolidated its free chunks and carves "
               "small requests off the top, as on a fresh heap. Both states are real; the ratios differ "
               "accordingly:", "", hs, ""]
    sl = shared_loader_table(table, rounds)
    if sl:
        md += ["### One shared loader (`MS_LOADER_SHARED`), one thread", "",
               "Each thread bumps in its own window of the shared loader (docs/threads.md); the thread rows "
               "of the table above show the same loader under 2 and 4 threads.", "", sl, ""]
    share = table.get("metaspace", {}).get("slow_path_share/mix", {}).get("raw")
    if share:
        md += ["### Where the size mix leaves the fast path", "",
               "`metaspace/slow_path_share/mix` replays the mix into 4 MiB loaders and classifies each request "
               "by what the inline path finds, in its order (percent of that space's requests):", "",
               "| space | requests | window parked (fast path off) | no room before the window's end | "
               "a free block could hold it |",
               "|---|---|---|---|---|"]
        for sp in ("nonclass", "class"):
            md.append(f"| {sp} | {share.get(sp + '_blocks', 0):,.0f} | {share.get(sp + '_parked_pct', 0):.2f} % | "
                      f"{share.get(sp + '_no_room_pct', 0):.2f} % | {share.get(sp + '_fits_free_pct', 0):.2f} % |")
        md += ["", f"Slow-path calls: **{share.get('slow_per_kblock', 0):.1f} per 1 000 blocks**. Fixed sizes on warm "
               "memory leave the fast path only at chunk ends (well under 1 per 1 000 blocks, see the profile "
               "below); on fresh memory also at every 4 KiB commit granule.", ""]
    md += ["### Page faults (per 1 000 blocks)", "",
           "Warm rows should show none (jemalloc's do: a destroyed arena's memory goes back to the kernel, so "
           "each new loader's arena faults afresh). Fresh-memory rows show about one fault per 4 KiB each "
           "allocator touched.", "", faults_table(table), "",
           "### Uncommit", "", uncommit_table(table), ""]
    scale = scale_table(table)
    if scale:
        md += ["### Per-call costs at scale", "",
               "Nothing here may grow with a chunk's age or the number of loaders: deallocation looks the "
               "block's chunk up in O(1) (per-node chunk start table), `ms_get_usage` reads counters, "
               "`ms_get_stats` visits each loader once without waiting for any and keeps nothing per loader. "
               "Peak RSS is what one `ms_get_stats` call adds to the process (VmHWM after resetting it).", "",
               scale, ""]
    md += ["## Fast path instruction count", ""]
    for name, p in (("ms_bench_probe_allocate(loader, bytes)", probe),
                    ("ms_bench_probe_allocate_88(loader) (constant size, as at most call sites)", probe88)):
        if p is None:
            md += [f"- `{name}`: objdump not available", ""]
            continue
        md += [f"`{name}` = `return ms_allocate(loader, MS_SPACE_NONCLASS, ...)`, compiled with the release "
               f"flags: **{p[0]} instructions on the fast path** (entry to the first `ret`), {p[1]} in all "
               "(the rest is the tail call to `ms_allocate_slow`).", "", "```"] + p[2] + ["```", ""]
    md += ["## Profile of the missed targets", "",
           profile_section(table, args.build, args.results, not args.no_profile), ""]
    fp = footprint_section(args.results)
    if fp:
        md += ["## Footprint of micro loaders", "", fp, ""]
    archive = os.path.join(args.results, "archive.md")
    if os.path.exists(archive):
        with open(archive) as f:
            md += ["## Class-data archive: start-up by mapping against building", "",
                   "`bench_archive` (bench/bench_archive.cpp; every start-up in a fresh process; "
                   "docs/archive.md explains the rows and the targets).", "", f.read().rstrip(), ""]
    md += ["## Lab headline figures", "", lab_section(args.results, args.build), ""]
    if os.path.exists(args.analysis):
        with open(args.analysis) as f:
            md += [f.read().rstrip(), ""]
    with open(args.out, "w") as f:
        f.write("\n".join(md))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
