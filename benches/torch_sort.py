#!/usr/bin/env python3
"""PyTorch's sort of the keys `tessera bench sort` sorts: reads them (raw little-endian u32)
from --keys, sorts them as int32 with indices (stable), and prints {name: median ms} as JSON."""
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
ap.add_argument("--reps", type=int, default=20)
args = ap.parse_args()
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")

keys = torch.from_numpy(np.fromfile(args.keys, dtype=np.int32)).cuda()


def median_ms(fn):
    return torch_timing.median_ms(fn, args.reps)


print(json.dumps({"sort_i32_indices": median_ms(lambda: torch.sort(keys, stable=True))}))
