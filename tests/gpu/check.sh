#!/usr/bin/env bash
# tests/gpu/check.sh: everything that needs a GPU, in one short run (under 8
# minutes on one H200): build, the GPU test suite (every bundled spec against
# the float64 reference, odd shapes, split counts), every spec through
# `assoc run --device gpu`, tuning of softmax, Welford and logsumexp, and their
# bandwidth beside the device-to-device copy and PyTorch in the same run.  The
# table comes last; the full log goes to the folder named by --log DIR or
# ASSOC_GPU_LOG (default build/gpu-check).
#
# The GPU machine has no package registry: where libyaml or Criterion are
# missing there, `make gpu-debs` (run on a machine that has apt) puts their
# .deb files under .debs/, which this script unpacks into .deps/.  Without
# llvm-config the build leaves the CPU backend out (NO_LLVM=1).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${ASSOC_GPU_LOG:-build/gpu-check}
[ "${1:-}" = --log ] && LOG=$2
mkdir -p "$LOG"
exec > >(tee "$LOG/check.log") 2>&1
start=$(date +%s)
fail=0
step() { echo; echo "== $* ($(($(date +%s) - start)) s)"; }
note_fail() { echo "FAILED: $*"; fail=1; }

step device
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader || note_fail "no nvidia-smi"

step dependencies
if ! echo '#include <yaml.h>' | cc -E -x c - >/dev/null 2>&1 && ls .debs/*.deb >/dev/null 2>&1; then
	mkdir -p .deps
	for f in .debs/*.deb; do dpkg -x "$f" .deps; done
fi
if [ -d .deps ]; then
	export CPATH=$PWD/.deps/usr/include${CPATH:+:$CPATH}
	export LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
	export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
flags=""
command -v llvm-config >/dev/null || flags="NO_LLVM=1"
echo "build flags: ${flags:-(none)}"

step build
make -j"$(nproc)" $flags build/assoc >"$LOG/build.log" 2>&1 || { tail -30 "$LOG/build.log"; note_fail build; exit 1; }
tests=0
if make -j"$(nproc)" $flags build/asan/tests build/asan/assoc >>"$LOG/build.log" 2>&1; then tests=1; else
	echo "Criterion tests not built (see $LOG/build.log); continuing with the command line"; fi

step "preflight: one spec through the GPU"
# the driver, NVRTC and a launch, before minutes are spent on the rest
if ! timeout 120 build/assoc run specs/sum.yaml --device gpu --rows 3 --len 33 >"$LOG/preflight.log" 2>&1; then
	cat "$LOG/preflight.log"
	note_fail "preflight: no GPU run (above); nothing else attempted"
	exit 1
fi

if [ $tests = 1 ]; then
	step "GPU test suite"
	# ASan's shadow gap must stay unprotected for the CUDA driver (its
	# cuInit fails with out of memory otherwise); the driver's own
	# allocations are not this project's leaks
	ASAN_OPTIONS=protect_shadow_gap=0 LSAN_OPTIONS=detect_leaks=0 \
		timeout 300 build/asan/tests --filter 'gpu/*' --verbose >"$LOG/tests.log" 2>&1 || note_fail "GPU tests"
	grep -E "Synthesis|FAIL|SKIP" "$LOG/tests.log" | tail -20
	grep -q "SKIP" "$LOG/tests.log" && note_fail "GPU tests skipped on a GPU machine (above)"
fi

step "every bundled spec on the GPU"
for spec in specs/*.yaml; do
	for shape in "--rows 3 --len 33" "--rows 64 --len 4099" "--rows 3 --len 4099 --split 7"; do
		timeout 120 build/assoc run "$spec" --device gpu $shape >>"$LOG/run.log" 2>&1 ||
			note_fail "run $spec $shape"
	done
done
grep -c "  ok" "$LOG/run.log" | sed 's/^/runs ok: /'

step tune
shapes="4096x4096 1024x32768 256x131072"
: >"$LOG/bench.jsonl"
for spec in online_softmax welford logsumexp; do
	for s in $shapes; do
		r=${s%x*} n=${s#*x}
		t0=$(date +%s.%N)
		timeout 120 build/assoc tune specs/$spec.yaml --rows "$r" --len "$n" >>"$LOG/tune.log" 2>&1 || note_fail "tune $spec $s"
		t1=$(date +%s.%N)
		echo "{\"tune\": \"$spec\", \"shape\": \"$s\", \"seconds\": $(python3 -c "print($t1 - $t0)")}" >>"$LOG/bench.jsonl"
		timeout 120 build/assoc bench specs/$spec.yaml --device gpu --rows "$r" --len "$n" --json >>"$LOG/bench.jsonl" 2>>"$LOG/tune.log" ||
			note_fail "bench $spec $s"
	done
done

step "attention (bf16, head dim 128, 8k keys, 16 heads)"
for spec in tests/attention/full_bf16.yaml tests/attention/causal_bf16.yaml; do
	timeout 120 build/assoc bench "$spec" --device gpu -D d=128 -D dv=128 --rows 8192 --len 8192 --heads 16 \
		--json >>"$LOG/bench.jsonl" 2>>"$LOG/tune.log" || note_fail "bench $spec"
done
# the variants' rule above; then what the tuner picks (32 or 16 query rows a warp, 4 or 8 warps, 1 to 3
# pipeline stages, 64 or 32 keys a tile)
timeout 180 build/assoc tune tests/attention/full_bf16.yaml -D d=128 -D dv=128 --rows 8192 --len 8192 --heads 16 \
	>>"$LOG/tune.log" 2>&1 || note_fail "tune attention"
timeout 120 build/assoc bench tests/attention/full_bf16.yaml --device gpu -D d=128 -D dv=128 --rows 8192 --len 8192 \
	--heads 16 --json >>"$LOG/bench.jsonl" 2>>"$LOG/tune.log" || note_fail "bench attention tuned"
grep -i "attention\|choice\|best" "$LOG/tune.log" | tail -4

step "decoding (bf16, head dim 128, one query, 32k keys, 32 query heads on 8 key/value heads, split KV)"
timeout 120 build/assoc bench tests/attention/full_bf16.yaml --device gpu -D d=128 -D dv=128 --rows 1 --len 32768 \
	--heads 32 --kv-heads 8 --json >>"$LOG/bench.jsonl" 2>>"$LOG/tune.log" || note_fail "bench decoding"
# and after tuning (variants x key splits)
timeout 180 build/assoc tune tests/attention/full_bf16.yaml -D d=128 -D dv=128 --rows 1 --len 32768 --heads 32 \
	--kv-heads 8 >>"$LOG/tune.log" 2>&1 || note_fail "tune decoding"
timeout 120 build/assoc bench tests/attention/full_bf16.yaml --device gpu -D d=128 -D dv=128 --rows 1 --len 32768 \
	--heads 32 --kv-heads 8 --json >>"$LOG/bench.jsonl" 2>>"$LOG/tune.log" || note_fail "bench decoding tuned"

step "spec to PTX on this host's $(nproc) cores (bench/ptx_time.sh)"
timeout 90 sh bench/ptx_time.sh specs/online_softmax.yaml 5 2>&1 | tail -5 || echo "ptx_time failed"

step PyTorch
python3 bench/torch_gpu.py $shapes >>"$LOG/bench.jsonl" 2>"$LOG/torch.log" || echo "PyTorch unavailable: $(tail -1 "$LOG/torch.log")"
python3 bench/torch_gpu.py --attention 16 8192 128 >>"$LOG/bench.jsonl" 2>>"$LOG/torch.log" || true

step "table (GB/s counts each input read once and each output written once)"
python3 - "$LOG/bench.jsonl" <<'PY' || cat "$LOG/bench.jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {(r["op"], r["rows"], r["len"]): r["gbps"] for r in rows if "gbps" in r and "op" in r}
tune = {(r["tune"], r["shape"]): r["seconds"] for r in rows if "tune" in r}
peer = {"online_softmax": "softmax", "welford": "var_mean", "logsumexp": "logsumexp"}
sdpa = {r["op"]: r["tflops"] for r in rows if r.get("op", "").startswith("sdpa")}
att = {}
for r in rows:
    if r.get("tflops") and "carrier" in r and r["rows"] > 1:
        peer_t = sdpa.get("sdpa_causal" if "causal" in r["carrier"] else "sdpa", 0)
        att["causal" in r["carrier"]] = r["tflops"]
        print(f"{r['carrier']:16} {r['rows']}x{r['len']} x16 heads: {r['tflops']:.0f} TFLOP/s"
              f" (torch SDPA {peer_t:.0f}, ratio {r['tflops'] / peer_t if peer_t else 0:.2f}; goal 330)")
    elif r.get("tflops") and "carrier" in r:
        print(f"{r['carrier']:16} decoding 1x{r['len']} x32/8 heads: {r['gbps']:.0f} GB/s, {r['ratio_to_copy']:.2f}"
              f" of copy (goal 0.70; {r['config']})")
if len(att) == 2:
    print(f"causal / non-causal TFLOP/s: {att[True] / att[False]:.2f} (goal 0.85 or more)")
print(f"{'carrier':16} {'shape':>11} {'assoc':>8} {'copy':>8} {'/copy':>6} {'torch':>8} {'/torch':>7} {'tune s':>7} {'warm ms':>8}")
for r in rows:
    if "gbps" not in r or "carrier" not in r or "tflops" in r and r["tflops"] > 0:
        continue
    shape = f"{r['rows']}x{r['len']}"
    t = torch.get((peer.get(r["carrier"], ""), r["rows"], r["len"]))
    print(f"{r['carrier']:16} {shape:>11} {r['gbps']:8.0f} {r['copy_gbps']:8.0f} {r['ratio_to_copy']:6.2f} "
          f"{(t or 0):8.0f} {(r['gbps'] / t if t else 0):7.2f} {tune.get((r['carrier'], shape), 0):7.2f} "
          f"{r['module_ms'] if r['module_cached'] else float('nan'):8.1f}")
PY
echo
echo "total $(($(date +%s) - start)) s; log in $LOG; $([ $fail = 0 ] && echo ALL OK || echo SOME FAILED)"
exit $fail
