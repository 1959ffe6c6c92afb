#!/bin/sh
# masked_rows.sh: softmax and logsumexp on the CPU over rows that hold -inf
# (a causal mask filled in, as attention scores and masked logits are) or
# values far under their row's maximum, beside the same shape of plain
# values, in the same run.  exp of such values is 0; computed through
# subnormal floats, each would cost an x86 core a microcode assist.  Each
# line gives the kernel, the naive C version and the memory copy
# (assoc bench --input); the ratio masked/plain is the figure to watch
# (1.0: masks cost nothing).
#   bench/masked_rows.sh [ROWS LEN]     (default 2048 x 2048)
# Python 3 (standard library only) writes the inputs.
set -eu
ROWS=${1:-2048}
LEN=${2:-2048}
THREADS=${THREADS:-1}
cd "$(dirname "$0")/.."
[ -x build/assoc ] || make build/assoc >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" "$ROWS" "$LEN" <<'PY'
import array, math, random, struct, sys
out, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def save(name, value):
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    random.seed(1)
    a = array.array("f", (value(i, j, random.gauss(0, 1)) for i in range(rows) for j in range(cols)))
    with open("%s/%s.npy" % (out, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + a.tobytes())
save("plain", lambda i, j, g: g)
save("causal", lambda i, j, g: g if j * rows <= i * cols else -math.inf)
save("far", lambda i, j, g: g if j < cols // 2 else g - 120)
PY
for spec in online_softmax logsumexp; do
	for data in plain causal far; do
		build/assoc bench specs/$spec.yaml --device cpu --threads "$THREADS" --input x="$dir/$data.npy" --json |
			sed "s/^{/{\"data\": \"$data\", /"
	done
done >"$dir/runs.jsonl"
python3 - "$dir/runs.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
plain = {r["carrier"]: r for r in rows if r["data"] == "plain"}
for r in rows:
    p = plain[r["carrier"]]
    naive = r["naive_gbps"] / r["bytes"] * r["rows"] * r["len"]
    print("%-15s %-7s %dx%d, %d thread(s): %.2f G elements/s (%.2f of plain), %.2f of copy, naive C %.2f G/s"
          % (r["carrier"], r["data"], r["rows"], r["len"], r["threads"], r["gelems"], r["gelems"] / p["gelems"],
             r["ratio_to_copy"], naive))
PY
