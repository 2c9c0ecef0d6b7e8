#!/usr/bin/env python3
"""PyTorch's group-by of the rows `tessera bench groupby` groups: reads the keys and values (raw
little-endian u32) from --keys and --values, and times a count and a 64-bit sum per key with
`index_add_` (keys as indices, --groups of them: the dense form a user would write) and
`unique(return_counts=True)`; prints {name: median ms} as JSON."""
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
ap.add_argument("--values", required=True)
ap.add_argument("--groups", type=int, required=True)
ap.add_argument("--reps", type=int, default=10)
args = ap.parse_args()
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")

# Keys below --groups, so int64 indices; values widened to int64 for the 64-bit sum.
keys = torch.from_numpy(np.fromfile(args.keys, dtype=np.uint32).astype(np.int64)).cuda()
values = torch.from_numpy(np.fromfile(args.values, dtype=np.uint32).astype(np.int64)).cuda()
ones = torch.ones_like(keys)


def index_add():
    counts = torch.zeros(args.groups, dtype=torch.int64, device="cuda")
    sums = torch.zeros(args.groups, dtype=torch.int64, device="cuda")
    counts.index_add_(0, keys, ones)
    sums.index_add_(0, keys, values)
    return counts, sums


def unique():
    return torch.unique(keys, return_counts=True)


print(json.dumps({
    "index_add": torch_timing.median_ms(index_add, args.reps),
    "unique_counts": torch_timing.median_ms(unique, args.reps),
}))
