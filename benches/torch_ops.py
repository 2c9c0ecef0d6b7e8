#!/usr/bin/env python3
"""PyTorch timings of the work `tessera bench ops` measures, on the same sizes and data
distribution, as a JSON object {name: median ms} on stdout. Run by the benchmark itself when
python3 with torch and a CUDA device are present."""
import argparse
import json
import os
import sys

try:
    import torch
except ImportError:
    sys.exit("torch is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1 << 29)
ap.add_argument("--reps", type=int, default=20)
args = ap.parse_args()
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")

dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(1)
x1 = torch.rand(args.n, device=dev, generator=g)
x2 = torch.rand(args.n, device=dev, generator=g)


def median_ms(fn):
    return torch_timing.median_ms(fn, args.reps)


out = {
    "sum": median_ms(lambda: x1.sum()),
    "masked_select_lt_0.5": median_ms(lambda: torch.masked_select(x1, x1 < 0.5)),
    "linear_unfused": median_ms(lambda: 2.0 * x1 + 3.0 * x2),
    "sigmoid_unfused": median_ms(lambda: torch.sigmoid(2.0 * x1 + 3.0 * x2)),
}
print(json.dumps(out))
