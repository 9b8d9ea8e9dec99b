#!/usr/bin/env python3
"""Writes the seed corpus (tests/fuzz/corpus/): a few small structured inputs for the decoder in
fuzz_driver.cpp, one per kind of metaspace (checked or not, reclaim policy, class alignment,
cap). Regenerate with: python3 tests/fuzz/make_corpus.py"""
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

# Operation codes (op % 20 in Session::step).
CREATE, DESTROY, USE_DEAD, ALLOC, FREE, DOUBLE, FOREIGN, INTERIOR, WRONG, STATS, PURGE, \
    OVERRUN, FAULT, THRESHOLD, BAD_HANDLES, CLASS_PTRS = 0, 1, 2, 3, 7, 9, 10, 11, 12, 13, 14, \
    15, 16, 17, 18, 19


def settings(checked, reclaim, align_shift, cap_kind, root_sel, granule_sel, destroy_first,
             gc=0, cap_arg=0):
    b0 = (checked & 1) | (reclaim << 1) | (align_shift << 3) | (cap_kind << 6)
    b1 = root_sel | (1 << 2) | (3 << 4)
    b2 = granule_sel | (0x80 if destroy_first else 0)
    return [b0, b1, b2, cap_arg, gc]


def workload(rng, n, checked):
    out = []
    for _ in range(3):
        out += [CREATE, rng.randrange(3), rng.randrange(2)]
    for _ in range(n):
        r = rng.random()
        li = rng.randrange(256)
        if r < 0.45:
            space = rng.choice([0, 1, 0x30, 0x31, 7])
            sel = rng.choice([1, 2, 3, 8, 11, 12, 13, 14, 0])
            out += [ALLOC, li, space, sel, rng.randrange(256), rng.randrange(256),
                    rng.randrange(256), rng.randrange(256)]
        elif r < 0.65:
            out += [FREE, li, rng.randrange(256), rng.randrange(256), rng.randrange(2)]
        elif r < 0.70:
            out += [CREATE, rng.randrange(4), rng.randrange(4)]
        elif r < 0.73:
            out += [DESTROY, li]
        elif r < 0.76:
            out += [USE_DEAD, li, rng.randrange(4), 1, 8]
        elif r < 0.80:
            out += [FOREIGN, li, rng.randrange(6), rng.randrange(256), rng.randrange(256), 3]
        elif r < 0.83 and checked:
            out += [DOUBLE, li, rng.randrange(256)]
        elif r < 0.86 and checked:
            out += [INTERIOR, li, rng.randrange(256), rng.randrange(256), rng.randrange(256),
                    rng.randrange(256), rng.randrange(256)]
        elif r < 0.88 and checked:
            out += [WRONG, li, rng.randrange(256), rng.randrange(256), rng.randrange(256)]
        elif r < 0.92:
            out += [STATS, li]
        elif r < 0.94:
            out += [PURGE]
        elif r < 0.96:
            out += [BAD_HANDLES, rng.randrange(12), rng.randrange(30)]
        elif r < 0.98:
            out += [CLASS_PTRS, li, rng.randrange(256), rng.randrange(256)]
        elif r < 0.99:
            out += [THRESHOLD, rng.randrange(256)]
        else:
            out += [FAULT, rng.randrange(2), rng.randrange(8)]
    if checked:
        out += [OVERRUN, 0, 0, 0, 0]
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(387)
    seeds = {
        "plain_balanced": settings(0, 1, 0, 0, 2, 0, True),
        "plain_none_align64": settings(0, 0, 3, 0, 1, 1, True),
        "plain_aggressive_cap": settings(0, 2, 0, 1, 0, 1, False, cap_arg=40),
        "checked_balanced": settings(1, 1, 0, 0, 2, 1, True),
        "checked_align1k_cap": settings(1, 1, 7, 2, 1, 1, True, gc=3, cap_arg=2),
        "checked_none_gc": settings(1, 0, 4, 0, 0, 2, False, gc=2),
        "bad_reclaim": settings(0, 3, 1, 0, 0, 3, True),
        "checked_aggressive_root4m": settings(1, 2, 2, 0, 3, 0, True),
    }
    for name, head in seeds.items():
        data = bytes(head + workload(rng, 120, head[0] & 1))
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(name, len(data))


if __name__ == "__main__":
    main()
