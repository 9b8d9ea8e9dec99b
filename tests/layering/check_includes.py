#!/usr/bin/env python3
"""The #include graph of src/ against the layer map (docs/design.md, "Layers").

Every file under src/<layer>/ may include files of its own layer and of the layers below it, never
a sibling's or anything above. Of the public headers, only src/api/ includes the API
(metaspace/metaspace.h, metaspace.hpp); every other layer includes the types
(metaspace/types.h) and the private layout (metaspace/detail/...). The public headers themselves
run the same way: types.h includes no other header of the library, detail/ only types.h and detail/.

Usage: check_includes.py ROOT api       only src/api/ includes metaspace/metaspace.h (.hpp)
       check_includes.py ROOT layers    src/ includes run down the layer map; public headers too
       check_includes.py --self-test    check that violations planted in a scratch tree are found
Exit status 0 when the graph runs down the map; 1 with one line per wrong #include otherwise.
"""
import os
import re
import sys
import tempfile

# Rank of each directory of src/: a file may include ranks below its own, and its own directory.
# Directories of one rank are siblings and do not include each other.
LAYERS = {
    "common": 0,                  # used by all
    "os": 1,
    "slab": 2,
    "commit": 3,
    "vspace": 4,
    "chunks": 5,
    "arena": 6, "context": 6,     # siblings on top of the chunk layer
    "loader": 7, "archive": 7,    # the archive sits beside loader
    "instance": 8,
    "stats": 9,
    "api": 10,
}
API_HEADERS = {"metaspace/metaspace.h", "metaspace/metaspace.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
SOURCE = (".cpp", ".hpp", ".h", ".c")


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def check_src(root, what=("api", "layers")):
    """Wrong #include lines of src/, as 'file: message': the API header ("api"), the layer
    map ("layers")."""
    errors = []
    src = os.path.join(root, "src")
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(SOURCE):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            layer = rel.split(os.sep)[0]
            if layer not in LAYERS:
                if "layers" in what:
                    errors.append(f"src/{rel}: directory '{layer}' is not in the layer map")
                continue
            for _, target in includes(path):
                if target.startswith("metaspace/"):
                    if "api" in what and target in API_HEADERS and layer != "api":
                        errors.append(f"src/{rel}: includes the API header {target} "
                                      f"(below api/, include metaspace/types.h or metaspace/detail/)")
                    continue
                other = target.split("/")[0]
                if "/" not in target or other not in LAYERS:
                    continue  # a system or library header
                if other == layer or "layers" not in what:
                    continue
                if LAYERS[other] >= LAYERS[layer]:
                    kind = "a sibling" if LAYERS[other] == LAYERS[layer] else "a layer above"
                    errors.append(f"src/{rel}: includes {target}, {kind} ({other} over {layer})")
    return errors


def check_public(root):
    """The public headers: types.h stands alone, detail/ needs only types.h and detail/."""
    errors = []
    inc = os.path.join(root, "include", "metaspace")
    for dirpath, _, files in os.walk(inc):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, inc).replace(os.sep, "/")
            for quote, target in includes(path):
                if quote == "<" and not target.startswith("metaspace/"):
                    continue  # a standard header
                # Resolve to a name relative to include/metaspace/.
                if quote == '"':
                    target = os.path.normpath(os.path.join(os.path.dirname(rel), target))
                    target = target.replace(os.sep, "/")
                else:
                    target = target[len("metaspace/"):]
                if rel == "types.h":
                    errors.append(f"include/metaspace/types.h: includes {target}")
                elif rel.startswith("detail/") and not (target == "types.h" or
                                                        target.startswith("detail/")):
                    errors.append(f"include/metaspace/{rel}: includes {target}")
    return errors


def self_test():
    """Plants one violation of each kind in a scratch tree and expects each to be reported."""
    cases = {
        "src/chunks/a.hpp": ('#include "arena/arena.hpp"\n', "a layer above"),
        "src/arena/b.hpp": ('#include "context/context.hpp"\n', "a sibling"),
        "src/loader/c.cpp": ("#include <metaspace/metaspace.h>\n", "API header"),
        "src/widgets/d.hpp": ("#include <stddef.h>\n", "not in the layer map"),
        "include/metaspace/types.h": ('#include "metaspace.h"\n', "types.h: includes"),
        "include/metaspace/detail/x.h": ('#include "../metaspace.h"\n', "detail/x.h: includes"),
    }
    clean = {
        "src/api/ok.cpp": "#include <metaspace/metaspace.h>\n#include \"stats/report.hpp\"\n",
        "src/loader/ok.hpp": "#include <metaspace/detail/loader_head.h>\n#include \"arena/arena.hpp\"\n"
                             "#include \"loader/micro_pool.hpp\"\n#include <vector>\n",
        "include/metaspace/detail/ok.h": '#include "../types.h"\n#include "loader_head.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in list(clean.items()) + [(r, t) for r, (t, _) in cases.items()]:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        errors = check_src(root) + check_public(root)
    missed = [f"{rel} ({want})" for rel, (_, want) in cases.items()
              if not any(e.startswith(rel) and want in e for e in errors)]
    wrong = [e for e in errors if "/ok." in e]
    for e in errors:
        print("found:", e)
    if missed or wrong or len(errors) != len(cases):
        print("self-test failed; missed:", missed, "reported on clean files:", wrong)
        return 1
    print(f"ok: the checker reports all {len(cases)} planted violations and nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3 or argv[2] not in ("api", "layers"):
        print(__doc__)
        return 2
    root, what = argv[1], argv[2]
    errors = check_src(root, (what,)) + (check_public(root) if what == "layers" else [])
    for e in errors:
        print(e)
    if errors:
        return 1
    n = sum(len(f) for _, _, f in os.walk(os.path.join(root, "src")))
    print(f"ok: {n} files in src/; " + ("only src/api/ includes metaspace/metaspace.h"
                                          if what == "api" else
                                          "their #include lines run down the layer map, and the "
                                          "public headers' down types.h <- detail/ <- metaspace.h"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
