"""CUDA-event timing shared by the PyTorch comparison scripts: the same protocol as tessera's
benchmarks (3 warm-up runs, then the median of `reps` timed runs)."""
import torch


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    m = len(times) // 2
    return times[m] if len(times) % 2 else (times[m - 1] + times[m]) / 2
