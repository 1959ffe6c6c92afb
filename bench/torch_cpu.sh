#!/bin/sh
# torch_cpu.sh: assoc's CPU kernels beside PyTorch's CPU softmax, var_mean
# and logsumexp on the same machine, same shapes, same threads.
#   bench/torch_cpu.sh [ROWS LEN]     (default 8192 x 32768: 1 GiB of float32)
# Installs PyTorch into build/torch-venv from the Python package index (its
# wheel brings the CUDA libraries it needs to import, even on a CPU); the
# project itself never depends on Python.  Prints one JSON line per
# contestant and the ratios.
set -eu
ROWS=${1:-8192}
LEN=${2:-32768}
THREADS=${THREADS:-$(nproc)}
cd "$(dirname "$0")/.."
. bench/torch_venv.sh
for spec in online_softmax welford logsumexp; do
	build/assoc bench specs/$spec.yaml --device cpu --rows "$ROWS" --len "$LEN" --threads "$THREADS" --json
done > build/bench_assoc.json
$VENV/bin/python - "$ROWS" "$LEN" "$THREADS" <<'PY'
import json, sys
import torch
rows, n, threads = map(int, sys.argv[1:])
torch.set_num_threads(threads)
x = torch.randn(rows, n, dtype=torch.float32)
sys.path.insert(0, "bench")
from torch_timing import med
ib = rows * n * 4
out = {
    "online_softmax": (ib * 2 + rows * 4, med(lambda: torch.softmax(x, dim=1))),
    "welford": (ib + rows * 8, med(lambda: torch.var_mean(x, dim=1, unbiased=False))),
    "logsumexp": (ib + rows * 4, med(lambda: torch.logsumexp(x, dim=1))),
}
assoc = {}
for line in open("build/bench_assoc.json"):
    j = json.loads(line)
    assoc[j["carrier"]] = j
print(f"torch {torch.__version__}, {threads} threads, {rows} x {n} float32")
for k, (b, t) in out.items():
    a = assoc[k]
    tg = b / t / 1e9
    print(json.dumps({"carrier": k, "assoc_gbps": a["gbps"], "torch_gbps": round(tg, 3), "copy_gbps": a["copy_gbps"],
                      "naive_gbps": a["naive_gbps"], "assoc_over_torch": round(a["gbps"] / tg, 3),
                      "assoc_over_copy": a["ratio_to_copy"], "torch_over_copy": round(tg / a["copy_gbps"], 3)}))
PY
