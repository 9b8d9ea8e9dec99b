#!/usr/bin/env python3
"""Draws a metaspace-lab run (the JSON document of `metaspace-lab <scenario>`) into a PNG.

usage: plot_lab.py [--progress] [--quiet-if-missing] RUN.json OUT.png [RUN.json OUT.png ...]
       plot_lab.py --stdin [--progress] [--quiet-if-missing]   (lines "RUN.json<tab>OUT.png")
(a run: one figure for its scenario; summary.json of `compare replay A B ...`: the summary)
Every figure is drawn in this one process (starting Python and importing matplotlib costs more
than a figure); with --stdin each as soon as its line arrives, which is how metaspace-lab draws the
figures of earlier traces while later ones replay. --progress prints a line per figure on stderr.
A figure that fails is reported and the others are still drawn (exit status 1 at the end).

The figure depends on the scenario:
  interleaved, spikes, replay: footprint per backend against live (and HotSpot's committed), then
      footprint/live (HotSpot: committed/used, and committed/live where the trace gives live), then
      the RSS of each backend's process (HotSpot's whole-JVM RSS is not comparable and not drawn);
      each panel is linear where live, the library and HotSpot stay readable, with a logarithmic
      band above it (a broken axis) for a backend far beyond them, its maximum written beside it;
  threads: classes loaded per second and speed-up against the thread count, with the load;
  one-loader: footprint and class space per class against the class alignment;
  micro: footprint and RSS per loader at the peak, and footprint over the steps;
  summary: the worst footprint/live per trace and backend, HotSpot's own beside them, each trace's
           placement floor as a bar across its group;
  startup (`metaspace-lab startup`): bars of the time to ready per start-up mode and thread count
      (the best of the repeats), and the RSS and PSS each start-up gained.
Every backend keeps one colour, line style and marker in every figure; a series equal to an
earlier one says so in the legend. Exit status 3 when
matplotlib is missing (metaspace-lab reports it), 2 on bad input.
"""
import json
import math
import os
import sys
import time

NO_MATPLOTLIB = 3
MIB = 1024.0 * 1024.0
ELASTIC_GOAL = 1.05
MAX_XTICKS = 24

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    # Slide-ready: text that stays readable when a figure is shown at the width of a page.
    matplotlib.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
                                "legend.fontsize": 10, "xtick.labelsize": 10, "ytick.labelsize": 10})
except ImportError:
    # --quiet-if-missing: metaspace-lab tries the next python3 and says itself if none has it.
    if "--quiet-if-missing" not in sys.argv:
        sys.stderr.write("plot_lab.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(NO_MATPLOTLIB)

# (colour, line style, marker) per backend, so that no series hides another and a backend looks
# the same in every figure.
STYLES = {
    "elastic": ("#1f77b4", "-", "o"),
    "elastic-4k": ("#17becf", (0, (5, 1)), "<"),
    "elastic-16k": ("#ff7f0e", "--", "s"),
    "elastic-64k": ("#bcbd22", (0, (3, 1, 1, 1)), ">"),
    "no-reclaim": ("#2ca02c", "-.", "^"),
    "malloc": ("#d62728", "-", "v"),
    "malloc-trim": ("#9467bd", ":", "D"),
    "mimalloc": ("#8c564b", "--", "P"),
    "jemalloc": ("#e377c2", "-.", "X"),
}
HOTSPOT = dict(color="#555555", linewidth=3, alpha=0.5, marker="*", markersize=11, zorder=4)


def style(name, n_points=0):
    color, line, marker = STYLES.get(name, ("#7f7f7f", "-", "."))
    every = max(1, n_points // 30) if n_points else 1
    if name == "elastic":
        # The library's default: a thick solid line with filled markers on top of every other
        # series, so a variant that coincides with it (elastic-16k) cannot hide it.
        return dict(color=color, linestyle=line, marker=marker, markersize=6, linewidth=2.6, markevery=every,
                    zorder=5)
    # The others: hollow markers a little larger than elastic's, so one that coincides with a series
    # drawn over it still shows a ring around it.
    return dict(color=color, linestyle=line, marker=marker, markersize=8, linewidth=1.5, markevery=every,
                markerfacecolor="white", markeredgecolor=color, markeredgewidth=1.4, zorder=3)


def same_as(ys, drawn):
    """The name of an already drawn series equal to ys within 0.5 % at every point, or None: the
    legend then says so, since the later line covers the earlier one."""
    for name, other in drawn.items():
        if len(other) == len(ys) and all((a != a and b != b) or (a == a and b == b and abs(a - b) <= 0.005 * max(abs(b), 1e-9))
                                         for a, b in zip(ys, other)):
            return name
    return None


def log_ticks(lo, hi, most=4):
    """1-2-5 steps between lo and hi (exclusive of lo), at most `most` of them, for a log band that
    may span less than a decade."""
    ticks = []
    k = math.floor(math.log10(max(lo, 1e-12)))
    while 10 ** k <= hi * 10:
        ticks += [m * 10 ** k for m in (1, 2, 5) if lo * 1.05 < m * 10 ** k <= hi]
        k += 1
    while len(ticks) > most:
        ticks = ticks[::2]
    return ticks or [hi / 1.6]


class BrokenAxis:
    """A panel whose y axis is linear from `bottom` to `top` (where the series that matter differ)
    with, when some series goes far beyond, a logarithmic band above it: every backend stays
    visible and none squashes the others into one line. Each series far beyond has its maximum
    written next to its highest point."""

    def __init__(self, fig, spec, bottom, top, high, sharex=None):
        self.bottom, self.top, self.high = bottom, top, high
        if high is not None and high > top:
            inner = spec.subgridspec(2, 1, height_ratios=[1, 3], hspace=0.05)
            self.upper = fig.add_subplot(inner[0], sharex=sharex)
            self.lower = fig.add_subplot(inner[1], sharex=sharex or self.upper)
            self.upper.set_yscale("log")
            self.upper.set_ylim(top, high * 1.6)
            self.upper.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(log_ticks(top, high * 1.6)))
            self.upper.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            self.upper.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            self.upper.spines["bottom"].set_visible(False)
            self.lower.spines["top"].set_visible(False)
            self.upper.tick_params(axis="x", which="both", bottom=False, labelbottom=False)
            # The break marks: two short diagonals on each side of the gap.
            kw = dict(marker=[(-1, -0.5), (1, 0.5)], markersize=10, linestyle="none", color="k", mec="k", mew=1,
                      clip_on=False)
            self.upper.plot([0, 1], [0, 0], transform=self.upper.transAxes, **kw)
            self.lower.plot([0, 1], [1, 1], transform=self.lower.transAxes, **kw)
            self.upper.grid(True, alpha=0.3)
        else:
            self.upper = None
            self.lower = fig.add_subplot(spec, sharex=sharex)
        self.lower.set_ylim(bottom, top)
        self.labelled = []

    def plot(self, xs, ys, **kw):
        self.lower.plot(xs, ys, **kw)
        if self.upper is None:
            return
        kw = {k: v for k, v in kw.items() if k != "label"}
        self.upper.plot(xs, ys, **kw)
        far = [(x, y) for x, y in zip(xs, ys) if y == y and y > self.top]
        if far:
            x, y = max(far, key=lambda p: p[1])
            self.labelled.append((x, y, kw.get("color", "black")))

    def finish(self, unit=""):
        """Writes the far series' maxima, staggered so that neighbours do not overlap."""
        for k, (x, y, color) in enumerate(sorted(self.labelled, key=lambda p: p[1])):
            self.upper.annotate(f"{y:.1f}{unit}", (x, y), xytext=(8, -4 - 9 * (k % 2)), textcoords="offset points",
                                fontsize=9, color=color, fontweight="bold", zorder=7,
                                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1))

    def set_ylabel(self, text):
        self.lower.set_ylabel(text)
        if self.upper is not None:
            self.upper.set_ylabel("log")

    def set_title(self, text, **kw):
        (self.upper or self.lower).set_title(text, **kw)

    def axes(self):
        return [a for a in (self.upper, self.lower) if a is not None]


def label(sample):
    return f"{sample['phase']} {sample['step']}"


def title_lines(run, what):
    """'replay jdk25-unload: footprint against live'. The command line (with its paths) is in the
    JSON and on the HTML page, not on a figure meant for slides."""
    name = run.get("label") or ""
    return f"{run['scenario']}" + (f" {name}" if name else "") + f": {what}"


def thin_xticks(ax, steps):
    """At most MAX_XTICKS labels, evenly spread, so long traces stay readable."""
    every = max(1, math.ceil(len(steps) / MAX_XTICKS))
    ticks = list(range(0, len(steps), every))
    ax.set_xticks(ticks)
    ax.set_xticklabels([steps[i] for i in ticks], rotation=50, ha="right", fontsize=10)


def legend(ax):
    ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def judged(samples, den):
    """Samples whose denominator is at least 1 % of its peak: the verdict's rule."""
    peak = max((den(s) for s in samples), default=0)
    return [s for s in samples if den(s) > 0 and den(s) * 100 >= peak]


def footprint(s):
    return s.get("footprint", s["committed"])


def save_png(fig, out):
    # zlib level 3: much quicker than the default level for files slightly larger.
    fig.savefig(out, dpi=100, pil_kwargs={"compress_level": 3})


def save(fig, out, title):
    fig.suptitle(title, fontsize=13)
    fig.tight_layout()
    save_png(fig, out)


def axes_by(ax_list, xs, label, xlabel):
    """The same x axis on every panel of a pair: ticks, their labels, the name, a light grid."""
    for ax in ax_list:
        ax.set_xticks(xs)
        if label:
            ax.set_xticklabels(label)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)


def plot_over_steps(run, out):
    # `repeat` samples (spikes: the timed rounds after the sampled one) are timings on a fresh
    # backend with nothing live: not points of the memory curve.
    backends = [dict(b, samples=[s for s in b["samples"] if s["phase"] != "repeat"])
                for b in run["backends"] if b["samples"]]
    steps = [label(s) for s in backends[0]["samples"]]
    index = {name: i for i, name in enumerate(steps)}
    n = len(steps)

    def series(samples, value):
        xs, ys = [], []
        for s in samples:
            i = index.get(label(s))
            if i is not None:
                xs.append(i)
                ys.append(value(s))
        return xs, ys

    def ratio_of(s):
        return footprint(s) / s["live"] if s["live"] else math.nan

    # The linear part of each panel ends where the library, live and HotSpot stay readable: an
    # allocator that holds many times live (mimalloc's 64 MiB segments on an 8 MiB trace) goes
    # into the logarithmic band above it instead of squashing them into one line.
    live_peak = max(s["live"] for s in backends[0]["samples"]) / MIB
    refs = [r for r in run.get("references", []) if series(r["samples"], lambda s: 0)[0]]
    hotspot_peak = max([s["committed"] / MIB for r in refs for s in r["samples"]] + [0])
    elastic_peak = max([footprint(s) / MIB for b in backends if b["name"].startswith("elastic")
                        for s in b["samples"]] + [0])
    mem_top = 1.5 * max(live_peak, hotspot_peak, elastic_peak, 1e-9)

    hotspot_ratios = []
    for ref in refs:
        _, r = series(ref["samples"], lambda s: s["committed"] / s["used"] if s["used"] else math.nan)
        hotspot_ratios += [y for y in r if y == y]
        if any(s["live"] != s["used"] for s in ref["samples"]):
            ok = {label(s) for s in judged(ref["samples"], lambda s: s["live"])}
            _, r = series(ref["samples"], lambda s: s["committed"] / s["live"] if label(s) in ok else math.nan)
            hotspot_ratios += [y for y in r if y == y]
    focus = [y for b in backends if b["name"].startswith("elastic") for y in series(b["samples"], ratio_of)[1]
             if y == y]
    ratio_top = max([2.0] + [1.15 * y for y in focus + hotspot_ratios])
    elastic_rss = max([s["rss"] / MIB for b in backends if b["name"].startswith("elastic") for s in b["samples"]] + [0])
    rss_top = 1.5 * max(live_peak, elastic_rss, 1e-9)

    # What each backend draws in each panel, computed first: the panels' far bands need the maxima.
    drawn = []
    for b in backends:
        ok = {label(s) for s in judged(b["samples"], lambda s: s["live"])}
        drawn.append((b, series(b["samples"], lambda s: footprint(s) / MIB),
                      series(b["samples"], lambda s: ratio_of(s) if label(s) in ok else math.nan),
                      series(b["samples"], lambda s: s["rss"] / MIB)))

    def high(k):
        return max([y for d in drawn for y in d[k][1] if y == y] + [0])

    fig = plt.figure(figsize=(14, 15))
    # Fixed margins (the legends in the right one): a tight bounding box would draw the figure twice.
    grid = fig.add_gridspec(3, 1, height_ratios=[3, 2.2, 2.2], hspace=0.3, left=0.07, right=0.74, top=0.965,
                            bottom=0.1)
    mem = BrokenAxis(fig, grid[0], 0, mem_top, high(1))
    ratio = BrokenAxis(fig, grid[1], 0.9, ratio_top, high(2), sharex=mem.lower)
    rss = BrokenAxis(fig, grid[2], 0, rss_top, high(3), sharex=mem.lower)

    xs, ys = series(backends[0]["samples"], lambda s: s["live"] / MIB)
    # Live on top of everything, thin and dashed: the reference every footprint is read against
    # (elastic lies within a few per cent of it and would hide a line drawn under it).
    mem.plot(xs, ys, color="black", linestyle=(0, (4, 3)), linewidth=1.6, label="live (requested, not freed)",
             zorder=8)
    drawn_mem, drawn_ratio, drawn_rss = {}, {}, {}

    def named(name, ys, seen, suffix=""):
        twin = same_as(ys, seen)
        seen[name] = ys
        return f"{name}{suffix}" + (f" (same as {twin})" if twin else "")

    for b, (mx, my), (rx, ry), (sx, sy) in drawn:
        st = style(b["name"], n)
        mem.plot(mx, my, label=named(b["name"], my, drawn_mem), **st)
        ratio.plot(rx, ry, label=named(b["name"], ry, drawn_ratio), **st)
        rss.plot(sx, sy, label=named(b["name"], sy, drawn_rss), **st)

    for ref in refs:
        xs, ys = series(ref["samples"], lambda s: s["committed"] / MIB)
        mem.plot(xs, ys, label=f"{ref['name']} committed", **HOTSPOT)
        own_live = any(s["live"] != s["used"] for s in ref["samples"])
        _, used = series(ref["samples"], lambda s: s["used"] / MIB)
        mem.plot(xs, used, color="#555555", linewidth=1.2, linestyle=":", label=f"{ref['name']} used")
        _, r = series(ref["samples"], lambda s: s["committed"] / s["used"] if s["used"] else math.nan)
        ratio.plot(xs, r, label=f"{ref['name']} committed/used (its own)", **HOTSPOT)
        if own_live:
            ok = {label(s) for s in judged(ref["samples"], lambda s: s["live"])}
            _, r = series(ref["samples"], lambda s: s["committed"] / s["live"] if label(s) in ok else math.nan)
            ratio.plot(xs, r, color="#555555", linewidth=1.5, linestyle="--", marker="*", markersize=6,
                       label=f"{ref['name']} committed / trace live")

    ratio.lower.axhline(ELASTIC_GOAL, color="green", linewidth=1.2, linestyle="--", label=f"goal {ELASTIC_GOAL}")
    mem.finish(" MiB")
    ratio.finish()
    rss.finish(" MiB")

    mem.set_title(title_lines(run, "footprint against live"), fontsize=13)
    mem.set_ylabel("footprint (MiB)")
    ratio.set_title("footprint / live (samples with live below 1 % of the peak left out)", fontsize=11)
    ratio.set_ylabel("footprint / live (ratio)")
    rss.set_title("RSS of each backend's process above its baseline (the lab's own tables left out; "
                  "HotSpot's whole-JVM RSS is not comparable)", fontsize=11)
    rss.set_ylabel("RSS (MiB)")
    rss.lower.set_xlabel(x_axis_title(run))
    thin_xticks(rss.lower, steps)
    for panel in (mem, ratio):
        panel.lower.tick_params(axis="x", labelbottom=False)
    for panel in (mem, ratio, rss):
        panel.lower.grid(True, alpha=0.3)
        legend(panel.lower)
    save_png(fig, out)


def x_axis_title(run):
    if run["scenario"] == "replay":
        return ("sample (trace markers: gc N = HotSpot's GC N, peak, unload; deaths = the end of a run of "
                "loader deaths)")
    return "step (phase and step of the scenario)"


def load_note(run):
    """The machine's load when a timing was taken, and whether it makes the timing inconclusive
    (busier than its cores: the figure then shows the scheduler, not the allocator)."""
    machine = run.get("machine", {})
    loads, cpus = machine.get("load_average") or [], machine.get("cpus")
    if not loads or not cpus:
        return ""
    busy = loads[0] > cpus
    return (f"\ntimed at load average {loads[0]:.2f} on {cpus} cores" +
            (": busier than its cores, timings INCONCLUSIVE" if busy else ""))


def plot_threads(run, out):
    fig, (ax_tp, ax_sp) = plt.subplots(1, 2, figsize=(13, 5.5))
    for b in run["backends"]:
        best = {}  # threads -> the best of the repeated runs, as the verdict takes it
        for s in b["samples"]:
            if s["phase"] == "load" and s["elapsed_ns"] > 0:
                t = s["extra"].get("threads", s["step"])
                rate = s["extra"].get("classes", 0) / (s["elapsed_ns"] / 1e9)
                best[t] = max(best.get(t, 0), rate)
        pts = sorted(best.items())
        if not pts:
            continue
        st = style(b["name"])
        ax_tp.plot([p[0] for p in pts], [p[1] / 1000 for p in pts], label=b["name"], **st)
        ax_sp.plot([p[0] for p in pts], [p[1] / pts[0][1] for p in pts], label=b["name"], **st)
    threads = sorted({s["extra"].get("threads", s["step"]) for b in run["backends"] for s in b["samples"]})
    ax_sp.plot(threads, threads, color="black", linestyle=":", linewidth=1, label="linear")
    axes_by((ax_tp, ax_sp), threads, None, "threads")
    ax_tp.set_ylabel("thousand classes loaded per second")
    ax_tp.set_title("throughput (best of the runs)", fontsize=10)
    ax_tp.set_ylim(bottom=0)  # rates read against zero
    ax_sp.set_ylabel("speed-up over 1 thread")
    ax_sp.set_ylim(bottom=0)
    ax_sp.set_title("speed-up (best of the runs)", fontsize=10)
    legend(ax_sp)
    save(fig, out, title_lines(run, "throughput against threads") + load_note(run))


def plot_one_loader(run, out):
    fig, (ax_cost, ax_room) = plt.subplots(1, 2, figsize=(14, 5.5))
    aligns = set()
    drawn_cost, drawn_room = {}, {}
    for b in run["backends"]:
        pts = sorted((s["step"], footprint(s) / max(1, s["extra"].get("classes", 1)),
                      s["extra"].get("class_committed", math.nan) / max(1, s["extra"].get("classes", 1)))
                     for s in b["samples"] if s["phase"] == "loaded")
        if not pts:
            continue
        aligns |= {p[0] for p in pts}
        st = style(b["name"])
        cost = [p[1] for p in pts]
        twin = same_as(cost, drawn_cost)
        drawn_cost[b["name"]] = cost
        ax_cost.plot([p[0] for p in pts], cost, label=b["name"] + (f" (same as {twin})" if twin else ""), **st)
        room = [p[2] for p in pts]
        if any(r == r for r in room):  # only the library backends know their class space
            twin = same_as(room, drawn_room)
            drawn_room[b["name"]] = room
            ax_room.plot([p[0] for p in pts], room, label=b["name"] + (f" (same as {twin})" if twin else ""), **st)
    for ax in (ax_cost, ax_room):
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)  # a cost read against zero, not against the cheapest
    axes_by((ax_cost, ax_room), sorted(aligns), [str(a) for a in sorted(aligns)], "class alignment (bytes)")
    ax_cost.set_ylabel("footprint bytes per class")
    ax_cost.set_title("footprint per class, every backend", fontsize=10)
    ax_room.set_ylabel("class-space committed bytes per class")
    ax_room.set_title("class space per class (the library backends: the others have none)", fontsize=10)
    ax_cost.legend(fontsize=10, loc="lower right")
    ax_room.legend(fontsize=10, loc="lower right")
    save(fig, out, title_lines(run, "cost against class alignment"))


def plot_micro(run, out):
    backends = [b for b in run["backends"] if b["samples"]]
    fig, (ax_bar, ax_steps) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [1, 1.3]})
    names, foot, rss, live = [], [], [], []
    for b in backends:
        loads = [s for s in b["samples"] if s["phase"] == "load"]
        if not loads:
            continue
        peak = loads[-1]
        n = max(1, peak["extra"].get("loaders", 1))
        names.append(b["name"])
        foot.append(footprint(peak) / n / 1024)
        rss.append(peak["rss"] / n / 1024)
        live.append(peak["live"] / n / 1024)
    x = range(len(names))
    ax_bar.bar([i - 0.2 for i in x], foot, width=0.4, label="footprint per loader",
               color=[STYLES.get(n, ("#777",))[0] for n in names])
    ax_bar.bar([i + 0.2 for i in x], rss, width=0.4, label="RSS per loader", color="white",
               edgecolor=[STYLES.get(n, ("#777",))[0] for n in names], hatch="//")
    if live:
        ax_bar.axhline(live[0], color="black", linestyle="--", linewidth=1.5, label="live per loader")
    # A log axis (mimalloc's 600 KiB beside the library's 5), so every bar carries its value: bar
    # lengths on a log axis are not proportions.
    for i, (f, r) in enumerate(zip(foot, rss)):
        for dx, v in ((-0.2, f), (0.2, r)):
            ax_bar.annotate(f"{v:.1f}", (i + dx, v), xytext=(0, 2), textcoords="offset points",
                            ha="center", fontsize=9, rotation=90)
    ax_bar.set_xticks(list(x))
    ax_bar.set_xticklabels(names, rotation=30, ha="right")
    ax_bar.set_yscale("log")
    ax_bar.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax_bar.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
    ax_bar.set_ylim(top=max(foot + rss + [1]) * 3)
    ax_bar.set_ylabel("KiB per loader, all loaders alive (log; the value on each bar)")
    ax_bar.set_title("per loader at the peak: footprint (solid), RSS (hatched)", fontsize=10)
    ax_bar.grid(True, axis="y", alpha=0.3)
    ax_bar.legend(fontsize=10, loc="upper left")
    steps = [label(s) for s in backends[0]["samples"]]
    drawn = {}
    for b in backends:
        ys = [footprint(s) / MIB for s in b["samples"]]
        twin = same_as(ys, drawn)
        drawn[b["name"]] = ys
        ax_steps.plot(range(len(b["samples"])), ys, label=b["name"] + (f" (same as {twin})" if twin else ""),
                      **style(b["name"]))
    ax_steps.plot(range(len(steps)), [s["live"] / MIB for s in backends[0]["samples"]], color="black",
                  linestyle="--", linewidth=2, label="live")
    thin_xticks(ax_steps, steps)
    ax_steps.set_yscale("symlog", linthresh=1)
    ax_steps.set_ylim(bottom=0)  # nothing is negative: no mirrored half of the symlog axis
    ax_steps.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax_steps.set_ylabel("footprint MiB (log above 1)")
    ax_steps.set_xlabel("step (phase and step of the scenario)")
    ax_steps.set_title("footprint while loading, then unloading in random order", fontsize=10)
    ax_steps.grid(True, alpha=0.3)
    legend(ax_steps)
    save(fig, out, title_lines(run, "one-class loaders"))


STARTUP_MODES = (("build", "build (no archive)", "#d62728"), ("map", "map at base", "#1f77b4"),
                 ("relocate", "relocate (base taken)", "#ff7f0e"), ("relocate-eager", "relocate, eager", "#9467bd"))


def plot_startup(run, out):
    best = {(s["mode"], s["threads"]): s for s in run["best"]}
    threads = run["params"]["threads"]
    pairs = [p for p in run.get("two_processes", []) if "error" not in p]
    if pairs:
        fig, (ax_t, ax_m, ax_p) = plt.subplots(1, 3, figsize=(18, 5.5), gridspec_kw={"width_ratios": [3, 2.2, 1.4]})
    else:
        fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(13, 5.5))
    width = 0.8 / len(STARTUP_MODES)
    for i, (mode, label, color) in enumerate(STARTUP_MODES):
        xs = [j + (i - (len(STARTUP_MODES) - 1) / 2) * width for j in range(len(threads))]
        ys = [best[(mode, t)]["ready_ms"] if (mode, t) in best else 0 for t in threads]
        create = [best[(mode, t)]["create_ms"] if (mode, t) in best else 0 for t in threads]
        # Light: the whole start-up (ready); dark inside it: ms_create alone, what the verdict
        # judges (the classes loaded after it cost every mode about the same).
        bars = ax_t.bar(xs, ys, width, color=color, alpha=0.35, edgecolor=color)
        ax_t.bar(xs, create, width, label=label, color=color)
        ax_t.bar_label(bars, fmt="%.1f", fontsize=9)
    ax_t.set_xticks(range(len(threads)), [f"{t} thread{'s' if t > 1 else ''}" for t in threads])
    ax_t.set_ylabel("time (ms, best of the runs)")
    ax_t.set_title("dark: ms_create (the verdict's); light: ready = ms_create + the classes loaded after",
                   fontsize=10)
    ax_t.set_ylim(0, ax_t.get_ylim()[1] * 1.25)  # room for the legend above the tallest bar
    ax_t.legend(fontsize=10, loc="upper center", ncol=2)
    # Memory at the first thread count: RSS and PSS side by side per mode.
    t0 = threads[0]
    names = [label.replace(" (", "\n(").replace(", ", ",\n") for mode, label, _ in STARTUP_MODES if (mode, t0) in best]
    rss = [best[(mode, t0)]["rss"] / MIB for mode, _, _ in STARTUP_MODES if (mode, t0) in best]
    pss = [best[(mode, t0)]["pss"] / MIB for mode, _, _ in STARTUP_MODES if (mode, t0) in best]
    xs = range(len(names))
    b1 = ax_m.bar([x - 0.2 for x in xs], rss, 0.4, label="RSS", color="#7f7f7f")
    b2 = ax_m.bar([x + 0.2 for x in xs], pss, 0.4, label="PSS", color="#2ca02c")
    ax_m.bar_label(b1, fmt="%.1f", fontsize=9)
    ax_m.bar_label(b2, fmt="%.1f", fontsize=9)
    ax_m.set_xticks(list(xs), names, fontsize=10)
    ax_m.set_ylabel("MiB gained by start-up")
    ax_m.set_title(f"memory at {t0} thread{'s' if t0 > 1 else ''}", fontsize=10)
    ax_m.legend(fontsize=10)
    if pairs:
        # Two processes at once: the archive's pages are shared (PSS half of RSS), built metadata
        # is not. The first process of each pair (the second measured the same, within 1 %).
        labels = {"map": "archive\n(every page read)", "build": "built"}
        names = [labels.get(q["mode"], q["mode"]) for q in pairs]
        xs = range(len(pairs))
        b1 = ax_p.bar([x - 0.2 for x in xs], [q["rss"][0] / MIB for q in pairs], 0.4, label="RSS", color="#7f7f7f")
        b2 = ax_p.bar([x + 0.2 for x in xs], [q["pss"][0] / MIB for q in pairs], 0.4, label="PSS", color="#2ca02c")
        ax_p.bar_label(b1, fmt="%.1f", fontsize=9)
        ax_p.bar_label(b2, fmt="%.1f", fontsize=9)
        ax_p.set_xticks(list(xs), names, fontsize=10)
        ax_p.set_ylabel("MiB gained, each of two processes")
        ax_p.set_title("two processes at once", fontsize=10)
        ax_p.set_ylim(0, ax_p.get_ylim()[1] * 1.15)
        ax_p.legend(fontsize=10, loc="upper center", ncol=2)
    p = run["params"]
    title = f"start-up: {p['classes']} classes archived, {p['loaded_after']} loaded after" + load_note(run)
    fig.suptitle(title, fontsize=13)
    fig.tight_layout()
    save_png(fig, out)


def plot_summary(summary, out):
    traces = []
    for r in summary["rows"]:
        if r["trace"] not in traces:
            traces.append(r["trace"])
    backends = []
    for r in summary["rows"]:
        if r["backend"] not in backends:
            backends.append(r["backend"])
    # 14 inches at 100 dpi: the page shows the figure at its own size, so its text is 10-13 px.
    fig = plt.figure(figsize=(14, 7.5))
    fig.subplots_adjust(left=0.07, right=0.72, top=0.92, bottom=0.2)
    width = 0.8 / max(1, len(backends) + 1)
    points = {}  # name -> (xs, ys)
    for k, name in enumerate(backends):
        xs, ys = [], []
        for i, t in enumerate(traces):
            for r in summary["rows"]:
                if r["trace"] == t and r["backend"] == name and r["max_footprint_live"] is not None:
                    xs.append(i - 0.4 + (k + 0.5) * width)
                    ys.append(r["max_footprint_live"])
        points[name] = (xs, ys)
    xs, own, live = [], [], []
    for i, t in enumerate(traces):
        for h in summary.get("hotspot", []):
            if h["trace"] == t:
                xs.append(i - 0.4 + (len(backends) + 0.5) * width)
                own.append(h["max_committed_used"])
                live.append(h["max_committed_live"])
    # Linear over the range where the library, malloc and HotSpot differ (1.0-1.6 on the real
    # traces, at most up to 2.2); mimalloc's and jemalloc's 10-40x go into the logarithmic band
    # above it, each with its value written beside it.
    values = [y for _, ys in points.values() for y in ys] + [y for y in own + live if y is not None]
    top = max(1.5, min(2.2, 1.1 * max(values + [0])))
    grid = fig.add_gridspec(1, 1)
    panel = BrokenAxis(fig, grid[0], 0.95, top, max(values + [0]))
    ax = panel.lower
    for k, (name, (pxs, pys)) in enumerate(points.items()):
        st = style(name)
        for a in panel.axes():
            a.plot(pxs, pys, linestyle="none", marker=st["marker"], color=st["color"], markersize=10,
                   markerfacecolor=st.get("markerfacecolor", st["color"]), markeredgewidth=1.6,
                   label=name if a is ax else None, zorder=st["zorder"])
        if panel.upper is not None:
            for x, y in zip(pxs, pys):
                if y > top:
                    panel.upper.annotate(f"{y:.1f}", (x, y), xytext=(0, 7), textcoords="offset points",
                                         ha="center", fontsize=9, color=st["color"], fontweight="bold")
    ax.plot(xs, own, linestyle="none", marker="*", color="#555555", markersize=14, label="HotSpot committed/used")
    ax.plot([x + 0.5 * width for x in xs], live, linestyle="none", marker="*", markerfacecolor="white",
            color="#555555", markersize=14, label="HotSpot committed / trace live")
    ax.axhline(ELASTIC_GOAL, color="green", linewidth=1.2, linestyle="--", label=f"goal {ELASTIC_GOAL}")
    # The placement floor (docs/placement-bound.md): a bar across the trace's group, so a miss
    # above it reads as the allocator's and one under it as the trace's.
    floor_label = "placement floor"
    for i, t in enumerate(traces):
        for f in summary.get("placement_floor", []):
            if f["trace"] == t and f["with_bookkeeping"] is not None and f["with_bookkeeping"] <= top:
                ax.hlines(f["with_bookkeeping"], i - 0.42, i + 0.42, colors="black", linewidth=2, zorder=4,
                          label=floor_label)
                floor_label = None
    ax.set_xticks(range(len(traces)))
    ax.set_xticklabels(traces, rotation=25, ha="right")
    ax.set_xlim(-0.5, len(traces) - 0.5)
    for a in panel.axes():
        for i in range(1, len(traces)):
            a.axvline(i - 0.5, color="#dddddd", linewidth=1)
    ax.set_xlabel("trace")
    ax.set_ylabel("worst footprint / live (ratio)")
    ax.grid(True, axis="y", alpha=0.3)
    legend(ax)
    panel.set_title(f"worst footprint/live per trace and backend ({len(traces)} traces)", fontsize=13)
    save_png(fig, out)


def draw(json_path, out):
    with open(json_path) as f:
        run = json.load(f)
    if run.get("scenario") == "startup":
        plot_startup(run, out)
    elif "rows" in run:
        plot_summary(run, out)
    elif not any(b["samples"] for b in run["backends"]):
        raise ValueError("no samples to plot")
    elif run["scenario"] == "threads":
        plot_threads(run, out)
    elif run["scenario"] == "one-loader":
        plot_one_loader(run, out)
    elif run["scenario"] == "micro":
        plot_micro(run, out)
    else:
        plot_over_steps(run, out)
    plt.close("all")


def draw_one(json_path, out, progress, label):
    """Draws one figure; False (and a message) if it failed: one bad figure must not cost the others."""
    start = time.monotonic()
    try:
        draw(json_path, out)
    except Exception as e:
        plt.close("all")
        sys.stderr.write(f"plot_lab.py: {json_path}: {type(e).__name__}: {e}\n")
        return False
    if progress:
        # One write per line: the lab prints its own progress lines meanwhile.
        sys.stderr.write(f"{label} drew {os.path.basename(out)} in {time.monotonic() - start:.1f} s\n")
        sys.stderr.flush()
    return True


def main(argv):
    args = argv[1:]
    progress = "--progress" in args
    stdin = "--stdin" in args
    args = [a for a in args if a not in ("--progress", "--quiet-if-missing", "--stdin")]
    if stdin:
        # "JSON<tab>PNG" lines, each drawn as it arrives (metaspace-lab sends them while it goes on
        # replaying), until the end of the input.
        if args:
            sys.stderr.write(__doc__)
            return 2
        failed = drawn = 0
        for line in iter(sys.stdin.readline, ""):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2:
                sys.stderr.write(f"plot_lab.py: bad input line {line!r}: expected JSON<tab>PNG\n")
                failed += 1
                continue
            drawn += 1
            failed += not draw_one(parts[0], parts[1], progress, f"[figure {drawn}]")
        return 1 if failed else 0
    if not args or len(args) % 2:
        sys.stderr.write(__doc__)
        return 2
    pairs = list(zip(args[0::2], args[1::2]))
    failed = 0
    for i, (json_path, out) in enumerate(pairs, 1):
        failed += not draw_one(json_path, out, progress, f"[{i}/{len(pairs)}]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
