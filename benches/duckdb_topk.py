#!/usr/bin/env python3
"""DuckDB's `ORDER BY x DESC LIMIT k` on the keys `tessera bench topk` measures, the CPU anchor:
reads them (raw little-endian, of --dtype) from --keys into a DuckDB table (not timed), then for
each k of --ks times `SELECT x, rowid FROM t ORDER BY x DESC LIMIT k` on all cores; prints
{"n=N k=K": median ms} as JSON. Exits with a message when duckdb (or numpy, and pandas or
pyarrow to hand it the keys) is not importable."""
import argparse
import json
import statistics
import sys
import time

try:
    import duckdb
    import numpy as np
except ImportError as e:
    sys.exit(f"{e.name} is not installed")

ap = argparse.ArgumentParser()
ap.add_argument("--keys", required=True)
ap.add_argument("--dtype", default="float32", choices=["float32", "float64", "int32", "uint32"])
ap.add_argument("--ks", default="32")
ap.add_argument("--ns", default="", help="ignored: DuckDB is timed on all the keys")
ap.add_argument("--reps", type=int, default=5)
args = ap.parse_args()

keys = np.fromfile(args.keys, dtype=args.dtype)
con = duckdb.connect()
try:
    import pyarrow as pa

    con.register("src", pa.table({"x": keys}))
except ImportError:
    try:
        import pandas as pd

        con.register("src", pd.DataFrame({"x": keys}))
    except ImportError:
        sys.exit("neither pyarrow nor pandas is installed")
con.execute("CREATE TABLE t AS SELECT x FROM src")
con.unregister("src")
out = {}
for k in (int(x) for x in args.ks.split(",")):
    query = f"SELECT x, rowid FROM t ORDER BY x DESC LIMIT {k}"
    con.execute(query).fetchall()
    times = []
    for _ in range(max(args.reps, 1)):
        t = time.perf_counter()
        con.execute(query).fetchall()
        times.append((time.perf_counter() - t) * 1e3)
    out[f"n={len(keys)} k={k}"] = statistics.median(times)
print(json.dumps(out))
