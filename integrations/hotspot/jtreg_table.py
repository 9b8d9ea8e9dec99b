#!/usr/bin/env python3
"""Tables jtreg results (jtreg.sh): one run, or two side by side (flag off, flag on).

    jtreg_table.py DIR [--seconds N]        one run: totals and every test not passed
    jtreg_table.py OFF_DIR ON_DIR [ENV_DIR] side by side: one row per test, and the totals

DIR is a jtreg.sh output folder (summary.txt is jtreg's -v:summary output).
"""
import argparse
import pathlib
import re
import sys

LINE = re.compile(r"^(Passed|FAILED|Error):\s+(\S+\.java\S*)")
TOTALS = re.compile(r"^Test results: (.*)$")


def read(folder):
    text = (pathlib.Path(folder) / "summary.txt").read_text(errors="replace")
    results = {}
    totals = ""
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            results[m.group(2)] = {"Passed": "pass", "FAILED": "FAIL", "Error": "ERROR"}[m.group(1)]
        m = TOTALS.match(line)
        if m:
            totals = m.group(1)
    return results, totals


def counts(results):
    out = {}
    for status in results.values():
        out[status] = out.get(status, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--seconds", type=int)
    a = ap.parse_args()
    if len(a.dirs) == 1:
        results, totals = read(a.dirs[0])
        c = counts(results)
        took = f", {a.seconds // 60} min {a.seconds % 60} s" if a.seconds is not None else ""
        print(f"{c.get('pass', 0)} passed, {c.get('FAIL', 0) + c.get('ERROR', 0)} failed{took}"
              f"  (jtreg: {totals or 'no totals line'})")
        for test, status in sorted(results.items()):
            if status != "pass":
                print(f"  {status:5} {test}")
        return 0
    off, off_totals = read(a.dirs[0])
    on, on_totals = read(a.dirs[1])
    env, env_totals = read(a.dirs[2]) if len(a.dirs) > 2 else ({}, "")
    cols = ["flag off", "flag on (-vmoption)"] + (["flag on (JAVA_TOOL_OPTIONS)"] if env else [])
    print("| test | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for test in sorted(set(off) | set(on) | set(env)):
        cells = [off.get(test, "not run"), on.get(test, "not run")]
        if env:
            cells.append(env.get(test, "not run"))
        print(f"| {test} | " + " | ".join(cells) + " |")
    print()
    print(f"flag off:                    {off_totals}")
    print(f"flag on (-vmoption):         {on_totals}")
    if env:
        print(f"flag on (JAVA_TOOL_OPTIONS): {env_totals}")
    # With the flag, a test counts as passing if it passed either way it was given the flag.
    worse = [t for t in off if off[t] == "pass" and on.get(t) != "pass" and env.get(t) != "pass"]
    print(f"passed with the flag off but in no run with it: {len(worse)}" + "".join(f"\n  {t}" for t in worse))
    return 0


if __name__ == "__main__":
    sys.exit(main())
