#!/usr/bin/env python3
"""Summarizes a scripts/variants-run.sh result directory: per variant, the geometric mean of
compressed over plain for each run and their median; per query, the medians of the plain
time, the compressed time and their ratio (plain: that variant's own processes).

    python3 scripts/variants_report.py DIR/res
    python3 scripts/variants_report.py --pick BASE DIR/res

With --pick, prints only the name of the variant whose median ratio is the lowest, if that
is not BASE's and beats it (nothing otherwise): the one the device half's check.sh then
tests, in the same call."""
import glob
import json
import math
import os
import statistics as st
import sys

EXPERIMENT = "ssb compressed vs uncompressed"


def load(d):
    runs = {}
    for f in sorted(glob.glob(os.path.join(d, "*-*.json"))):
        name, rnd = os.path.basename(f)[: -len(".json")].rsplit("-", 1)
        try:
            recs = json.load(open(f))
        except (OSError, ValueError) as e:
            print(f"skipped {f}: {e}", file=sys.stderr)
            continue
        # median_ms is the compressed engine's median, model_ms the plain one's.
        q = {r["param"]: (r["median_ms"], r["model_ms"]) for r in recs if r["experiment"] == EXPERIMENT}
        if q:
            runs.setdefault(name, []).append((int(rnd), q))
    if not runs:
        sys.exit(f"no reports in {d}")
    return runs


def ratios(rs):
    """The geometric mean of compressed over plain of each run, in run order."""
    return [math.exp(st.mean(math.log(c / p) for c, p in q.values())) for _, q in sorted(rs)]


def pick(base, d):
    medians = {name: st.median(ratios(rs)) for name, rs in load(d).items()}
    best = min(medians, key=medians.get)
    if best != base and (base not in medians or medians[best] < medians[base]):
        print(best)


def main(d):
    runs = load(d)
    for name, rs in runs.items():
        gms = ratios(rs)
        print(f"{name}: {len(rs)} runs, ratio per run {' '.join(f'{g:.3f}' for g in gms)}; "
              f"median {st.median(gms):.3f}")
    queries = sorted({k for rs in runs.values() for _, q in rs for k in q},
                     key=lambda s: [int(x) for x in s[1:].split(".")])
    print("\nmedians, ms: plain / compressed = ratio")
    print("query  " + "  ".join(f"{n:>22}" for n in runs))
    for qn in queries:
        cells = []
        for rs in runs.values():
            v = [q[qn] for _, q in rs if qn in q]
            cells.append(f"{st.median(p for _, p in v):6.3f} / {st.median(c for c, _ in v):6.3f} = "
                         f"{st.median(c / p for c, p in v):.3f}")
        print(f"{qn:6} " + "  ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--pick":
        pick(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
