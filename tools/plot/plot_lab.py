#!/usr/bin/env python3
"""Draws a metaspace-lab run (the JSON document of `metaspace-lab <scenario>`) into a PNG.

usage: plot_lab.py RUN.json OUT.png

Panels, over the samples of the run:
  1. committed per backend (solid) against what the lab holds live (black, dashed), with HotSpot's
     measured committed and used where the run has them (grey);
  2. committed / live per backend, with the elastic goal of 1.05;
  3. RSS of every backend's process.
Exit status 3 when matplotlib is missing (metaspace-lab reports it), 2 on bad input.
"""
import json
import math
import sys

NO_MATPLOTLIB = 3
MIB = 1024.0 * 1024.0
ELASTIC_GOAL = 1.05

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.stderr.write("plot_lab.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(NO_MATPLOTLIB)


def label(sample):
    return f"{sample['phase']} {sample['step']}"


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        run = json.load(f)

    backends = [b for b in run["backends"] if b["samples"]]
    if not backends:
        sys.stderr.write("plot_lab.py: no samples to plot\n")
        return 2
    # The x axis: the steps of the first backend; other series are placed by matching step.
    steps = [label(s) for s in backends[0]["samples"]]
    index = {name: i for i, name in enumerate(steps)}

    def series(samples, value):
        xs, ys = [], []
        for s in samples:
            i = index.get(label(s))
            if i is not None:
                xs.append(i)
                ys.append(value(s))
        return xs, ys

    fig, (ax_comm, ax_ratio, ax_rss) = plt.subplots(
        3, 1, figsize=(12, 12), sharex=True, gridspec_kw={"height_ratios": [3, 2, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    xs, ys = series(backends[0]["samples"], lambda s: s["live"] / MIB)
    ax_comm.plot(xs, ys, color="black", linestyle="--", linewidth=2.5, label="live (requested by the lab)", zorder=5)
    for n, b in enumerate(backends):
        color = colors[n % len(colors)]
        style = "-" if b["name"].startswith("elastic") else "-."
        xs, ys = series(b["samples"], lambda s: s["committed"] / MIB)
        ax_comm.plot(xs, ys, color=color, linestyle=style, marker="o", markersize=3, label=f"{b['name']} committed")
        xs, ys = series(b["samples"], lambda s: s["committed"] / s["live"] if s["live"] else math.nan)
        ax_ratio.plot(xs, ys, color=color, linestyle=style, marker="o", markersize=3, label=b["name"])
        xs, ys = series(b["samples"], lambda s: s["rss"] / MIB)
        ax_rss.plot(xs, ys, color=color, linestyle=style, marker="o", markersize=3, label=b["name"])

    for ref in run.get("references", []):
        xs, ys = series(ref["samples"], lambda s: s["committed"] / MIB)
        if xs:
            ax_comm.plot(xs, ys, color="grey", linewidth=3, alpha=0.6, label=f"{ref['name']} committed (measured)")
            _, used = series(ref["samples"], lambda s: s["used"] / MIB)
            ax_comm.plot(xs, used, color="grey", linewidth=1.5, linestyle=":", label=f"{ref['name']} used (measured)")
            _, ratio = series(ref["samples"], lambda s: s["committed"] / s["used"] if s["used"] else math.nan)
            ax_ratio.plot(xs, ratio, color="grey", linewidth=3, alpha=0.6, label=f"{ref['name']} (measured)")
            _, rss = series(ref["samples"], lambda s: s["rss"] / MIB)
            ax_rss.plot(xs, rss, color="grey", linewidth=3, alpha=0.6, label=f"{ref['name']} (measured, whole JVM)")

    ax_ratio.axhline(ELASTIC_GOAL, color="green", linewidth=1, linestyle="--", label=f"goal {ELASTIC_GOAL}")
    ax_ratio.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax_ratio.yaxis.set_major_formatter(plain)
    ax_ratio.yaxis.set_minor_formatter(plain)

    params = run.get("params", {})
    ax_comm.set_title(f"metaspace-lab {run['scenario']}: committed vs live (seed {params.get('seed', '?')})")
    ax_comm.set_ylabel("MiB")
    ax_ratio.set_title("committed / live (samples with nothing live are left out)")
    ax_ratio.set_ylabel("ratio (log)")
    ax_rss.set_title("RSS of each backend's process")
    ax_rss.set_ylabel("MiB")
    ax_rss.set_xticks(range(len(steps)))
    ax_rss.set_xticklabels(steps, rotation=60, ha="right", fontsize=8)
    for ax in (ax_comm, ax_ratio, ax_rss):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
