#!/usr/bin/env python3
"""PyTorch timings of the work `tessera bench ops` measures, on the same sizes and data
distribution, as a JSON object {name: median ms} on stdout. Run by the benchmark itself when
python3 with torch and a CUDA device are present."""
import argparse
import json
import sys

try:
    import torch
except ImportError:
    sys.exit("torch is not installed")

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
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    m = len(times) // 2
    return times[m] if len(times) % 2 else (times[m - 1] + times[m]) / 2


out = {
    "sum": median_ms(lambda: x1.sum()),
    "masked_select_lt_0.5": median_ms(lambda: torch.masked_select(x1, x1 < 0.5)),
    "linear_unfused": median_ms(lambda: 2.0 * x1 + 3.0 * x2),
    "sigmoid_unfused": median_ms(lambda: torch.sigmoid(2.0 * x1 + 3.0 * x2)),
}
print(json.dumps(out))
