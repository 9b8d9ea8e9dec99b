#!/usr/bin/env python3
"""Real Java programs on both metaspaces of one HotSpot binary (built by build.sh).

Runs each program with HotSpot's own metaspace (flag off) and with libmetaspace
(-XX:+UseLibMetaspace), alternating, several times, and tables what a runtime engineer asks:
metaspace used / committed after every GC (from -Xlog:gc+metaspace), the process's RSS sampled
from /proc, wall time, and classes loaded / unloaded. Writes OUT/compare.json, OUT/compare.md,
one figure per program and OUT/index.html.

    integrations/hotspot/compare.py --jdk WORK/jdk --src WORK/jdk17 [--out DIR] [--runs 3]
    integrations/hotspot/compare.py --jdk WORK/jdk [--out DIR] -- -cp app.jar Main ARGS...

The second form runs your own program (java's arguments after --) instead of the built-in ones.

Programs: `java -version` (start-up), javac compiling java.util of the JDK's own source, a scripted
jshell session, and ClassChurn (programs/ClassChurn.java: loaders created and dropped in waves,
with lambdas and reflection). Both modes map the JDK's CDS archive (dumped by build.sh with the
built VM).
"""
import argparse
import html
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
GC_LINE = re.compile(r"GC\((\d+)\) Metaspace: (\d+)K\((\d+)K\)->(\d+)K\((\d+)K\)")
FLAG = "-XX:+UseLibMetaspace"
MODES = ("off", "on")
JSHELL_SCRIPT = """\
int answer = 41 + 1
String s = "metaspace".repeat(3)
record Point(int x, int y) {}
var p = new Point(1, 2)
java.util.List.of(1, 2, 3, 4).stream().map(i -> i * i).reduce(0, Integer::sum)
class Counter { int n; int next() { return ++n; } }
var c = new Counter()
c.next() + c.next()
java.util.stream.IntStream.range(0, 100).boxed().collect(java.util.stream.Collectors.groupingBy(i -> i % 7)).size()
/exit
"""


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2)}


def process_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(root):
    """RSS of a process and its descendants, in KiB (jshell runs its code in a second JVM)."""
    children = {}
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d.name))
        except (OSError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        total += process_rss_kib(pid)
    return total


def run_once(cmd, stdin_text=None, cwd=None):
    """Runs cmd, sampling RSS every 5 ms for its first 250 ms (the root process alone, cheap to
    read: `java -version` is over in 50 ms, and no JVM has started a child by then), then the
    process tree every 20 ms. Returns wall seconds, samples [(t, KiB)], and output."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_text else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    if stdin_text:
        p.stdin.write(stdin_text)
        p.stdin.close()
    samples = []
    while p.poll() is None:
        t = time.monotonic() - start
        if t < 0.25:
            samples.append((t, process_rss_kib(p.pid)))
            time.sleep(0.005)
        else:
            samples.append((t, tree_rss_kib(p.pid)))
            time.sleep(0.02)
    wall = time.monotonic() - start
    out = p.stdout.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{out[-2000:]}")
    return wall, samples, out


def parse_logs(logdir):
    gcs, loaded, unloaded = [], 0, 0
    for f in sorted(pathlib.Path(logdir).glob("*.log")):
        for line in f.read_text(errors="replace").splitlines():
            m = GC_LINE.search(line)
            if m:
                gcs.append({"gc": int(m.group(1)), "used_kib": int(m.group(4)),
                            "committed_kib": int(m.group(5))})
            elif "[class,load" in line and " source: " in line:
                loaded += 1
            elif "[class,unload" in line and "unloading class" in line:
                unloaded += 1
    return gcs, loaded, unloaded


def programs(jdk, src, work, custom):
    java, javac, jshell = (str(jdk / "bin" / t) for t in ("java", "javac", "jshell"))
    if custom:
        return {" ".join(custom)[:40]: lambda vm: ([java, *vm, *custom], None)}
    util = src / "src/java.base/share/classes"
    churn = work / "churn"
    return {
        "java -version": lambda vm: ([java, *vm, "-version"], None),
        "javac java.util": lambda vm: ([javac, *["-J" + o for o in vm], "--patch-module",
                                        f"java.base={util}", "-implicit:none", "-nowarn",
                                        "-d", str(work / "javac-out"),
                                        *sorted(str(p) for p in (util / "java/util").glob("*.java"))],
                                       None),
        "jshell session": lambda vm: ([jshell, *["-J" + o for o in vm], *["-R" + o for o in vm],
                                       "--feedback", "concise"], JSHELL_SCRIPT),
        "ClassChurn": lambda vm: ([java, *vm, "-cp", str(churn / "driver"), "ClassChurn",
                                   str(churn / "payload"), "12", "400"], None),
    }


def build_churn(jdk, work):
    churn = work / "churn"
    shutil.rmtree(churn, ignore_errors=True)
    javac = str(jdk / "bin" / "javac")
    subprocess.run([javac, "-d", str(churn / "payload"),
                    *map(str, sorted((HERE / "programs/payload").glob("*.java")))], check=True)
    subprocess.run([javac, "-d", str(churn / "driver"),
                    str(HERE / "programs/ClassChurn.java")], check=True)


def percentile_rss(samples, points=10):
    """RSS at 10 %, 20 %, ... of the run's wall time (runs of different length compare by progress)."""
    if not samples:
        return []
    end = samples[-1][0] or 1
    out = []
    for k in range(1, points + 1):
        t = end * k / points
        out.append(max((kib for s, kib in samples if s <= t), default=samples[0][1]))
    return out


def measure(progs, work, runs, only, heap):
    results = {}
    for name, make in progs.items():
        if only and name not in only:
            continue
        results[name] = {m: {"runs": []} for m in MODES}
        for r in range(runs):
            for mode in MODES:  # alternating: both modes see the same load
                logdir = work / "logs" / f"{re.sub('[^a-z]+', '-', name.lower())}-{mode}-{r}"
                shutil.rmtree(logdir, ignore_errors=True)
                logdir.mkdir(parents=True)
                vm = [f"-Xlog:gc+metaspace,class+load,class+unload:file={logdir}/%p.log"]
                if heap and name != "java -version":
                    # A heap of fixed size, touched at start: its RSS is the same on both sides,
                    # so what differs is the rest (metaspace among it).
                    vm += [f"-Xms{heap}", f"-Xmx{heap}", "-XX:+AlwaysPreTouch"]
                if mode == "on":
                    vm.insert(0, FLAG)
                cmd, stdin_text = make(vm)
                wall, samples, _ = run_once(cmd, stdin_text, cwd=work)
                gcs, loaded, unloaded = parse_logs(logdir)
                results[name][mode]["runs"].append({
                    "wall_s": round(wall, 3), "peak_rss_kib": max((k for _, k in samples), default=0),
                    "rss_by_progress_kib": percentile_rss(samples), "gcs": gcs,
                    "classes_loaded": loaded, "classes_unloaded": unloaded,
                    "rss_samples": [(round(t, 3), k) for t, k in samples]})
                print(f"  {name:16} {mode:3} run {r + 1}/{runs}: {wall:6.2f} s, peak RSS "
                      f"{results[name][mode]['runs'][-1]['peak_rss_kib'] / 1024:7.1f} MiB, "
                      f"{len(gcs)} GCs", flush=True)
    return results


def summarize(results):
    rows = []
    for name, modes in results.items():
        row = {"program": name}
        for mode in MODES:
            runs = modes[mode]["runs"]
            best = min(runs, key=lambda x: x["wall_s"])
            ratios = [g["committed_kib"] / g["used_kib"] for x in runs for g in x["gcs"] if g["used_kib"]]
            row[mode] = {
                "best_wall_s": best["wall_s"],
                "median_wall_s": statistics.median(x["wall_s"] for x in runs),
                "peak_rss_mib": round(min(x["peak_rss_kib"] for x in runs) / 1024, 1),
                "gcs": len(best["gcs"]),
                "max_committed_over_used": round(max(ratios), 3) if ratios else None,
                "last_gc": best["gcs"][-1] if best["gcs"] else None,
                "classes_loaded": best["classes_loaded"],
                "classes_unloaded": best["classes_unloaded"],
            }
        off, on = row["off"], row["on"]
        row["wall_on_vs_off"] = round(on["best_wall_s"] / off["best_wall_s"], 3)
        row["peak_rss_on_vs_off"] = round(on["peak_rss_mib"] / off["peak_rss_mib"], 3) if off["peak_rss_mib"] else None
        # RSS at the same progress (10 % steps): the median of each mode's runs, and how far the
        # runs of the stock VM spread at that point (the noise a difference must clear).
        by_point = {m: list(zip(*(x["rss_by_progress_kib"] for x in modes[m]["runs"]))) for m in MODES}
        med = {m: [statistics.median(p) for p in by_point[m]] for m in MODES}
        spread_off = [max(p) - min(p) for p in by_point["off"]]
        n = len(med["on"])
        row["rss_on_le_off_at_progress_points"] = f"{sum(a <= b for a, b in zip(med['on'], med['off']))}/{n}"
        row["rss_on_above_off_beyond_noise"] = (
            f"{sum(a > b + s for a, b, s in zip(med['on'], med['off'], spread_off))}/{n}")
        row["rss_median_on_minus_off_mib"] = [round((a - b) / 1024, 1) for a, b in zip(med["on"], med["off"])]
        row["rss_spread_off_mib"] = [round(s / 1024, 1) for s in spread_off]
        rows.append(row)
    return rows


def table(rows, info):
    out = [f"Machine: {info['cpu']}, {info['cores']} cores, load {info['load_before']} before, "
           f"{info['load_after']} after; {info['runs']} alternating runs per program and mode"
           + (f"; heap fixed at {info['fixed_heap']}, pre-touched." if info.get("fixed_heap") else "."), "",
           "| program | wall off / on (best, s) | on/off | peak RSS off / on (MiB) | RSS on <= off (10 % steps, medians) "
           "| on above off beyond stock's spread | GCs off / on | committed/used at GC, max: off / on "
           "| classes loaded off / on | unloaded off / on |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        off, on = r["off"], r["on"]
        out.append(f"| {r['program']} | {off['best_wall_s']:.2f} / {on['best_wall_s']:.2f} | {r['wall_on_vs_off']:.3f} "
                   f"| {off['peak_rss_mib']} / {on['peak_rss_mib']} | {r['rss_on_le_off_at_progress_points']} "
                   f"| {r['rss_on_above_off_beyond_noise']} "
                   f"| {off['gcs']} / {on['gcs']} | {off['max_committed_over_used']} / {on['max_committed_over_used']} "
                   f"| {off['classes_loaded']} / {on['classes_loaded']} | {off['classes_unloaded']} / {on['classes_unloaded']} |")
    return "\n".join(out)


def plot(results, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = []
    colors = {"off": "#d95f02", "on": "#1b9e77"}
    label = {"off": "HotSpot's metaspace (flag off)", "on": "libmetaspace (-XX:+UseLibMetaspace)"}
    for name, modes in results.items():
        fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
        for mode in MODES:
            best = min(modes[mode]["runs"], key=lambda x: x["wall_s"])
            g = best["gcs"]
            if g:
                a.plot(range(1, len(g) + 1), [x["committed_kib"] / 1024 for x in g], "-o", ms=3,
                       color=colors[mode], label=f"{label[mode]}: committed")
                a.plot(range(1, len(g) + 1), [x["used_kib"] / 1024 for x in g], "--", color=colors[mode],
                       label=f"{label[mode]}: used")
            s = best["rss_samples"]
            b.plot([t for t, _ in s], [k / 1024 for _, k in s], color=colors[mode], label=label[mode])
        a.set_title(f"{name}: metaspace after each GC")
        a.set_xlabel("GC number")
        a.set_ylabel("MiB")
        a.legend(fontsize=7)
        b.set_title(f"{name}: process RSS")
        b.set_xlabel("time (s)")
        b.set_ylabel("RSS (MiB)")
        b.legend(fontsize=7)
        fig.tight_layout()
        fname = re.sub("[^a-z]+", "-", name.lower()).strip("-") + ".png"
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)
        names.append((name, fname))
    return names


def ensure_matplotlib():
    """The python3 first on PATH may lack matplotlib where the system's has it (Debian's
    python3-matplotlib): run again with the system's."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system):
            os.execv(system, [system, *sys.argv])
        sys.exit("compare.py: matplotlib is missing (apt-get install python3-matplotlib)")


def main():
    ensure_matplotlib()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jdk", required=True, type=pathlib.Path, help="the JDK whose libjvm.so build.sh made")
    ap.add_argument("--src", type=pathlib.Path, help="the HotSpot source folder (for javac's input)")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results/hotspot"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", action="append", help="run only this program (repeatable)")
    ap.add_argument("--fixed-heap", metavar="SIZE",
                    help="-Xms=-Xmx=SIZE and -XX:+AlwaysPreTouch for every program but java -version, "
                         "so that the heap's RSS is equal on both sides")
    ap.add_argument("program", nargs="*", help="after --: java's arguments for a program of your own")
    a = ap.parse_args()
    if not a.program and a.src is None:
        ap.error("--src is needed for the built-in programs (or give your own after --)")
    a.out.mkdir(parents=True, exist_ok=True)
    info = machine()
    info["runs"] = a.runs
    info["fixed_heap"] = a.fixed_heap
    with tempfile.TemporaryDirectory(prefix="ms-hotspot-") as tmp:
        work = pathlib.Path(tmp)
        if not a.program:
            build_churn(a.jdk, work)
        src = a.src.resolve() if a.src else None
        results = measure(programs(a.jdk.resolve(), src, work, a.program), work, a.runs, a.only,
                          a.fixed_heap)
    info["load_after"] = round(os.getloadavg()[0], 2)
    rows = summarize(results)
    text = table(rows, info)
    figures = plot(results, a.out)
    (a.out / "compare.json").write_text(json.dumps({"machine": info, "summary": rows, "runs": results}, indent=1))
    (a.out / "compare.md").write_text(text + "\n")
    body = "".join(f"<h2>{html.escape(n)}</h2><img src='{f}' style='max-width:100%'>" for n, f in figures)
    rows_html = html.escape(text).replace("\n", "<br>\n")
    (a.out / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>HotSpot on libmetaspace</title>"
        "<style>body{font-family:sans-serif;max-width:1300px;margin:auto}</style>"
        f"<h1>HotSpot 17 on two metaspaces, one binary</h1><p>{rows_html}</p>{body}")
    print()
    print(text)
    print(f"\nwritten: {a.out}/compare.md, compare.json, index.html and {len(figures)} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
