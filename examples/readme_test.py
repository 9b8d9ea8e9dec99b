#!/usr/bin/env python3
"""The README's quick start, run as written: every consumer it shows must build and run.

    examples/readme_test.py SCRATCH_DIR

The README marks what it shows with HTML comments (invisible when rendered) before a fenced block:

    <!-- file: examples/c-only/hello.c -->   the block is that file, byte for byte
    <!-- run: examples/c-only -->           the block is shell commands, run in a copy of that
                                            directory ("." : the repository itself), made for
                                            its first block; later ones continue in it

Blocks run in README order with HOME set to SCRATCH_DIR/home, so that `~/.local` is a fresh
prefix: the library is installed there by the README's own commands and each consumer is built
against that clean install. LD_LIBRARY_PATH, PKG_CONFIG_PATH and CMAKE_PREFIX_PATH are removed
from the environment: what a consumer needs must be in the commands shown.
"""
import os
import re
import shutil
import subprocess
import sys

MARK = re.compile(r"^<!-- (file|run): (\S+) -->$")


def blocks(readme):
    """(kind, argument, text, line number) for every marked fenced block."""
    lines = readme.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].rstrip("\n"))
        i += 1
        if not m:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            sys.exit(f"README.md:{i}: a '{m.group(0)}' marker must be followed by a fenced block")
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        yield m.group(1), m.group(2), "".join(lines[start:end]), start
        i = end + 1


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    scratch = os.path.abspath(sys.argv[1])
    shutil.rmtree(scratch, ignore_errors=True)
    home = os.path.join(scratch, "home")
    os.makedirs(home)

    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH")}
    # ccache (if the caller uses it) keeps its cache where it was, not in the new HOME.
    if shutil.which("ccache") and "CCACHE_DIR" not in env:
        cache_dir = subprocess.run(["ccache", "-k", "cache_dir"], capture_output=True, text=True)
        if cache_dir.returncode == 0 and cache_dir.stdout.strip():
            env["CCACHE_DIR"] = cache_dir.stdout.strip()
    env["HOME"] = home

    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    files = runs = 0
    for kind, arg, text, line in blocks(readme):
        if kind == "file":
            with open(os.path.join(repo, arg), encoding="utf-8") as f:
                if f.read() != text:
                    sys.exit(f"README.md:{line}: the block differs from {arg}; make them the same")
            files += 1
            continue
        if arg == ".":
            cwd = repo
        else:
            cwd = os.path.join(scratch, arg)
            if not os.path.isdir(cwd):  # later blocks for the same directory continue in it
                shutil.copytree(os.path.join(repo, arg), cwd)
        print(f"readme: README.md:{line}, in {'the repository' if arg == '.' else arg}:", flush=True)
        result = subprocess.run(["bash", "-e", "-u", "-o", "pipefail", "-x", "-c", text],
                                cwd=cwd, env=env)
        if result.returncode != 0:
            sys.exit(f"README.md:{line}: the commands failed (exit {result.returncode})")
        runs += 1
    if files == 0 or runs == 0:
        sys.exit("README.md: no marked blocks found (<!-- file: ... --> / <!-- run: ... -->)")
    print(f"readme: {files} files as shown, {runs} command blocks ran")


if __name__ == "__main__":
    main()
