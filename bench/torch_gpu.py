"""PyTorch's softmax, var_mean and logsumexp (and scaled_dot_product_attention
with --attention) on the GPU, timed like assoc bench
--device gpu: float32 rows of the given shape, median of CUDA-event-timed runs
after warm-up, L2 flushed before each run, bytes = inputs read once + outputs
written once.  Prints one JSON object per (op, shape)."""
import json
import sys

import torch


def timed(fn, flush, runs=11, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(runs):
        flush.fill_(i)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[runs // 2]


def attention(heads, seq, d, causal):
    """bf16 forward, one batch: 4 * seq * seq * d flops per head (half when causal)."""
    dev = torch.device("cuda")
    q, k, v = (torch.randn(1, heads, seq, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
    fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    flush = torch.empty(64 << 20, dtype=torch.float32, device=dev)
    ms = timed(fn, flush)
    flops = 4 * heads * seq * seq * d * (0.5 if causal else 1)
    print(json.dumps({"op": "sdpa_causal" if causal else "sdpa", "heads": heads, "rows": seq, "len": seq, "d": d,
                      "ms": ms, "tflops": flops / (ms * 1e9), "torch": torch.__version__}), flush=True)


def main():
    if sys.argv[1:2] == ["--attention"]:
        heads, seq, d = (int(v) for v in sys.argv[2:5])
        attention(heads, seq, d, False)
        attention(heads, seq, d, True)
        return
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1:]] or [(4096, 4096)]
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(2 * l2 // 4 + 1, dtype=torch.float32, device=dev)
    for rows, n in shapes:
        x = torch.randn(rows, n, device=dev, dtype=torch.float32)
        ops = {
            "softmax": (lambda: torch.softmax(x, dim=-1), 2 * rows * n * 4),
            "var_mean": (lambda: torch.var_mean(x, dim=-1, correction=0), rows * n * 4 + 2 * rows * 4),
            "logsumexp": (lambda: torch.logsumexp(x, dim=-1), rows * n * 4 + rows * 4),
        }
        for name, (fn, nbytes) in ops.items():
            ms = timed(fn, flush)
            print(json.dumps({"op": name, "rows": rows, "len": n, "ms": ms, "gbps": nbytes / (ms * 1e6),
                              "torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev)}), flush=True)


if __name__ == "__main__":
    main()
