#!/usr/bin/env python3
"""PyTorch's topk on the keys `tessera bench topk` measures: reads them (raw little-endian, of
--dtype) from --keys, and for each k of --ks and each prefix length of --ns (default: all keys)
times torch.topk(keys[:n], k) (values and indices); prints {"n=N k=K": median ms} as JSON."""
import argparse
import json
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    sys.exit(f"{e.name} is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--keys", required=True)
ap.add_argument("--dtype", default="float32", choices=["float32", "float64", "int32", "uint32"])
ap.add_argument("--ks", default="32")
ap.add_argument("--ns", default="")
ap.add_argument("--reps", type=int, default=10)
args = ap.parse_args()
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")

host = np.fromfile(args.keys, dtype=args.dtype)
if args.dtype == "uint32":
    # torch has no topk for uint32: the keys drawn below 2^31 order the same as int32.
    host = host.view(np.int32)
keys = torch.from_numpy(host).cuda()
ns = [int(x) for x in args.ns.split(",") if x] or [keys.numel()]
out = {}
for n in ns:
    view = keys[:n]
    for k in (int(x) for x in args.ks.split(",")):
        out[f"n={n} k={k}"] = torch_timing.median_ms(lambda: torch.topk(view, k), args.reps)
print(json.dumps(out))
