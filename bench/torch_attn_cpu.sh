#!/bin/sh
# torch_attn_cpu.sh: assoc's CPU attention beside PyTorch's CPU
# scaled_dot_product_attention, same machine, same shapes, same threads,
# in the same run.
#   [ASSOC=binary] bench/torch_attn_cpu.sh [QUERIES KEYS]  (default 1024 x 1024, one head)
# Head dims 64 and 128, without a mask and causal; then decoding: one query
# a head against DECODE_KEYS keys (default 32768), 32 query heads on 8
# key/value heads, head dim 128 (PyTorch with enable_gqa; assoc's ratio to
# a copy of the same bytes beside it).  assoc reads f16 q, k, v
# and accumulates in float32; PyTorch is timed on float32 and on float16
# inputs, and the faster of the two is the peer.  Figures are G (query, key)
# pairs a second (causal: counted over all pairs, as assoc's are).
# Installs PyTorch into build/torch-venv (bench/torch_venv.sh).
set -eu
Q=${1:-1024}
K=${2:-1024}
THREADS=${THREADS:-$(nproc)}
DECODE_KEYS=${DECODE_KEYS:-32768}
cd "$(dirname "$0")/.."
. bench/torch_venv.sh
for d in 64 128; do
	${ASSOC:-build/assoc} bench tests/attention/full.yaml --device cpu --rows "$Q" --len "$K" --threads "$THREADS" \
		-D d=$d -D dv=$d --json | sed "s/^{/{\"mask\": \"none\", \"d\": $d, /"
	${ASSOC:-build/assoc} bench specs/attention.yaml --device cpu --rows "$Q" --len "$K" --threads "$THREADS" \
		-D d=$d -D dv=$d --json | sed "s/^{/{\"mask\": \"causal\", \"d\": $d, /"
done > build/bench_attn.json
${ASSOC:-build/assoc} bench tests/attention/full.yaml --device cpu --rows 1 --len "$DECODE_KEYS" --heads 32 --kv-heads 8 \
	--threads "$THREADS" -D d=128 -D dv=128 --json | sed 's/^{/{"mask": "decode", "d": 128, /' >> build/bench_attn.json
$VENV/bin/python - "$Q" "$K" "$THREADS" <<'PY'
import json, sys
import torch
import torch.nn.functional as F
q_n, k_n, threads = map(int, sys.argv[1:])
torch.set_num_threads(threads)
sys.path.insert(0, "bench")
from torch_timing import med
print(f"torch {torch.__version__}, {threads} threads, {q_n} queries x {k_n} keys, one head; decode: 32 heads on 8")
print(f"{'mask':7} {'d':>4} {'assoc':>8} {'torch f32':>10} {'torch f16':>10} {'assoc/torch':>12}")
for line in open("build/bench_attn.json"):
    a = json.loads(line)
    d, causal = a["d"], a["mask"] == "causal"
    rows, keys, heads, kv = a["rows"], a["len"], a["heads"], a["kv_heads"]
    best = {}
    for dt in (torch.float32, torch.float16):
        q = torch.randn(1, heads, rows, d, dtype=dt)
        k = torch.randn(1, kv, keys, d, dtype=dt)
        v = torch.randn(1, kv, keys, d, dtype=dt)
        t = med(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=heads > kv))
        best[dt] = heads * rows * keys / t / 1e9
    peer = max(best.values())
    copy = f"   {a['ratio_to_copy']:.2f} of copy" if a["mask"] == "decode" else ""
    print(f"{a['mask']:7} {d:4} {a['gelems']:8.3f} {best[torch.float32]:10.3f} {best[torch.float16]:10.3f} "
          f"{a['gelems'] / peer:12.2f}{copy}")
PY
