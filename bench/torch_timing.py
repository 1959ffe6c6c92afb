# torch_timing.py: how bench/torch_cpu.sh and bench/torch_attn_cpu.sh time
# PyTorch, the rule `assoc bench` follows: one warm-up run, then the
# median of seven.
import time


def med(f, runs=7):
    f()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return sorted(t)[runs // 2]
