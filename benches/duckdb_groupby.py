#!/usr/bin/env python3
"""DuckDB's GROUP BY of the rows `tessera bench groupby` groups, the CPU anchor: reads the keys
and values (raw little-endian u32) from --keys and --values into a DuckDB table (not timed),
then times `SELECT k, count(*), sum(v) FROM t GROUP BY k ORDER BY k` on all cores, the result
materialized in a DuckDB table (so that Python's conversion of up to 10^8 rows is not timed);
prints {"group by order by (T threads)": median ms} as JSON. Exits with a message when duckdb
or numpy is not importable."""
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
ap.add_argument("--values", required=True)
ap.add_argument("--groups", type=int, default=0, help="ignored: DuckDB finds the groups")
ap.add_argument("--reps", type=int, default=5)
args = ap.parse_args()

keys = np.fromfile(args.keys, dtype=np.uint32)
values = np.fromfile(args.values, dtype=np.uint32)
con = duckdb.connect()
con.register("src", {"k": keys, "v": values})
con.execute("CREATE TABLE t AS SELECT k, v FROM src")
con.unregister("src")
threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
query = ("CREATE OR REPLACE TEMP TABLE r AS "
         "SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k ORDER BY k")
con.execute(query)
times = []
for _ in range(max(args.reps, 1)):
    t = time.perf_counter()
    con.execute(query)
    times.append((time.perf_counter() - t) * 1e3)
print(json.dumps({f"group by order by ({threads} threads)": statistics.median(times)}))
