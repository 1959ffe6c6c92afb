#!/usr/bin/env bash
# tests/gpu/check.sh: everything that needs a GPU, in one short run on one
# H200: build, every bundled spec through `assoc run --device gpu` against the
# float64 reference, a 20-second preflight of each path no device had run
# (the benchmarks and tuning of one that fails are skipped), attention
# (bf16, head dim 128, 8k; the Hopper template's
# schedules, the default and the warp-specialized ws=1 and ws=2) beside PyTorch's SDPA
# and decoding beside the copy, paged decoding (a batch of 8 in one launch,
# pages of 16 and 256) beside unpaged decoding of as many keys, paged chunked
# prefill checked in one launch, softmax, Welford and logsumexp beside the
# device-to-device copy and PyTorch, softmax and cross-entropy over a
# vocabulary's odd length (1024 x 50257), run --mpi on the GPU (where mpirun is),
# the GPU test suite (odd shapes, split counts), bf16 rows and layer norm at
# every shape, carriers no test uses (bench/carriers/), then tuning and the
# same benchmarks with the tuner's choices, then the row templates' tiles
# and transported fold by configuration, and rows across a thread-block
# cluster (cl) beside the rule's at the long shapes, and rows streamed by
# bulk copies (bk) beside the rule's at the three shapes, and last the
# carriers written from the docs alone (bench/carriers/more/ and new/).  The
# steps run in that order of importance inside a time budget (ASSOC_GPU_BUDGET
# seconds, default 480): a step that would not fit is skipped with a line
# saying so, and the table, which comes last, shows what ran.  The full log
# goes to the folder named by --log DIR or ASSOC_GPU_LOG (default
# build/gpu-check).
#
# The GPU machine has no package registry: where libyaml or Criterion are
# missing there, `make gpu-debs` (run on a machine that has apt) puts their
# .deb files under .debs/, which this script unpacks into .deps/.  Without
# llvm-config the build leaves the CPU backend out (NO_LLVM=1); without make
# the command line is built by one cc call.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${ASSOC_GPU_LOG:-build/gpu-check}
[ "${1:-}" = --log ] && LOG=$2
BUDGET=${ASSOC_GPU_BUDGET:-480}
mkdir -p "$LOG"
exec > >(tee "$LOG/check.log") 2>&1
start=$(date +%s)
fail=0
skipped=""
step() { echo; echo "== $* ($(($(date +%s) - start)) s)"; }
note_fail() { echo "FAILED: $*"; fail=1; }
left() { echo $((BUDGET - ($(date +%s) - start))); }
# fits SECONDS WHAT: whether WHAT, which takes about SECONDS, still fits
fits() {
	[ "$(left)" -ge "$1" ] && return 0
	echo "skipped: $2 (about $1 s; $(left) s of the budget left)"
	skipped="$skipped; $2"
	return 1
}
# lim SECONDS: a command's timeout, cut to what the budget has left
lim() { local l; l=$(left); [ "$l" -lt 10 ] && l=10; echo $(($1 < l ? $1 : l)); }

step device
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader || note_fail "no nvidia-smi"

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
echo "build flags: ${flags:-(none)}; cc: $(cc --version 2>&1 | head -1); make: $(command -v make || echo none)"

step build
have_make=$(command -v make)
if [ -n "$have_make" ]; then
	make -j"$(nproc)" $flags build/assoc >"$LOG/build.log" 2>&1
else
	mkdir -p build
	# as make NO_LLVM=1 NO_MPI=1 builds it: the CPU backend and MPI left out
	cc -std=c11 -D_GNU_SOURCE -O2 -I. -DASSOC_NO_LLVM -DASSOC_NO_MPI '-DASSOC_NO_MPI_WHY="built without make"' \
		-o build/assoc $(ls ir/*.c compiler/*/*.c runtime/*.c | grep -v 'llvm_load\|compiler/llvm/') \
		compiler/llvm/llvm_none.c -lyaml -lm -ldl -lpthread >"$LOG/build.log" 2>&1
fi || { tail -30 "$LOG/build.log"; note_fail build; exit 1; }
# the sanitized test suite builds beside the GPU steps, on half the cores
# (the spec runs, NVRTC and the float64 references take the rest); it runs
# after them.  Its make runs in a process group of its own, so that
# stopping it stops its compilers too (make does not pass SIGTERM on),
# whether the script stops it for time or exits early.
tests_pid=""
stop_tests() {
	[ -n "$tests_pid" ] && kill -- -"$tests_pid" 2>/dev/null
	tests_pid=""
}
trap stop_tests EXIT
if [ -n "$have_make" ]; then
	half=$(($(nproc) / 2))
	[ "$half" -ge 1 ] || half=1
	if command -v setsid >/dev/null; then
		setsid make -j"$half" $flags build/asan/tests build/asan/assoc >"$LOG/build-tests.log" 2>&1 &
	else
		set -m
		make -j"$half" $flags build/asan/tests build/asan/assoc >"$LOG/build-tests.log" 2>&1 &
		set +m
	fi
	tests_pid=$!
fi

step "preflight: one spec through the GPU"
# the driver, NVRTC and a launch, before minutes are spent on the rest
timeout 120 build/assoc run specs/sum.yaml --device gpu --rows 3 --len 33 >"$LOG/preflight.log" 2>&1
pre=$?
cat "$LOG/preflight.log"
[ $pre = 0 ] || { note_fail "preflight: no GPU run (above); nothing else attempted"; exit 1; }

step "preflight: one small checked run of each path no device had run (20 s each)"
# the Hopper attention template (the rule's schedule on sm_90, then ws=1
# and ws=2), its e4m3 path, rows across a cluster of 16 blocks and rows
# streamed by bulk copies.  A kernel that hangs (an mbarrier wait the
# hardware never completes traps after 3 s; a cluster barrier does not)
# or fails costs its 20 s here, once: the benchmarks and the tuning of a
# path whose preflight failed are skipped, each with a line saying so,
# rather than each spending its own timeout on it.
declare -A path_why # path -> why its benchmarks are skipped
unrun=""
preflight() { # preflight PATH ARGS...: one run of PATH's; its log in preflight-PATH.log
	local path=$1 rc why
	shift
	[ -n "${path_why[$path]:-}" ] && return 0
	if ! fits 20 "preflight $path"; then
		path_why[$path]="its preflight did not fit in the budget"
		return 0
	fi
	echo "# run $*" >>"$LOG/preflight-$path.log"
	timeout "$(lim 20)" build/assoc run "$@" --device gpu --verbose >>"$LOG/preflight-$path.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		echo "ok      $path: $* ($(grep -m1 -o 'gpu: [^ ]*' "$LOG/preflight-$path.log" | cut -c6-))"
		return 0
	fi
	[ $rc = 124 ] && why="timed out after 20 s" ||
		why="failed: $(grep -m1 -E 'assoc:|FAIL|error' "$LOG/preflight-$path.log" | cut -c1-200)"
	path_why[$path]="its preflight $why"
	note_fail "preflight $path: $* $why (preflight-$path.log)"
}
# path_ok WHAT PATH...: whether every PATH passed its preflight; else a
# line saying WHAT is skipped and why
path_ok() {
	local what=$1 p
	shift
	for p in "$@"; do
		if [ -n "${path_why[$p]:-}" ]; then
			echo "skipped: $what (path $p: ${path_why[$p]})"
			unrun="$unrun; $what ($p)"
			return 1
		fi
	done
	return 0
}
small="-D d=128 -D dv=128 --rows 300 --len 1000 --heads 2"
preflight hopper tests/attention/full_bf16.yaml $small
grep -q "gpu: attention:[^ ]*,wg=" "$LOG/preflight-hopper.log" 2>/dev/null ||
	echo "note: the rule did not pick the Hopper template for the preflight's shape (preflight-hopper.log)"
preflight ws1 tests/attention/full_bf16.yaml $small --config attention:wg=2,bn=128,st=2,ws=1
preflight ws2 tests/attention/full_bf16.yaml $small --config attention:wg=2,bn=128,st=2,ws=2
preflight fp8 tests/attention/fp8_descale.yaml $small
preflight cl16 specs/online_softmax.yaml --rows 4 --len 131072 --config rowmap:nt=512,acc=2,vec=4,items=16,cl=16
preflight cl16 specs/logsumexp.yaml --rows 4 --len 131072 --config rowreduce:nt=512,acc=2,vec=4,un=2,cl=16
preflight bk4 specs/online_softmax.yaml --rows 4 --len 131072 --config rowmap:nt=512,acc=4,vec=4,bk=4
preflight bk4 specs/welford.yaml --rows 4 --len 131072 --config rowreduce:nt=256,acc=4,vec=4,bk=4

step "every bundled spec on the GPU (8 at a time)"
# one process per spec and shape: each opens the driver, loads its module
# (compiled once per spec, then from the PTX cache) and checks every output
runs=$(mktemp -d)
for spec in specs/*.yaml; do
	for shape in "--rows 3 --len 33" "--rows 64 --len 4099" "--rows 3 --len 4099 --split 7"; do
		echo "$spec $shape"
	done
done | timeout "$(lim 150)" xargs -P 8 -L 1 sh -c 'f=$(echo "$*" | tr " /" "_-"); if build/assoc run "$@" --device gpu >"'"$runs"'/$f.log" 2>&1; then echo ok >>"'"$runs"'/$f.log"; else echo "FAILED: run $*" >>"'"$runs"'/$f.log"; fi' sh || note_fail "spec runs cut off or failed (xargs: $?)"
cat "$runs"/*.log >"$LOG/run.log"
nspecs=$(ls specs/*.yaml | wc -l) got=$(grep -c '^ok$' "$LOG/run.log")
echo "$got of $((nspecs * 3)) runs ($nspecs specs x 3 shapes) matched the reference"
[ "$got" = $((nspecs * 3)) ] || note_fail "spec runs: $got of $((nspecs * 3)) (run.log)"
grep "^FAILED" "$LOG/run.log"
grep -B4 "^FAILED" "$LOG/run.log" | grep -v "^FAILED" | head -30

: >"$LOG/bench.jsonl"
shape_of() {
	local r="" n=""
	while [ $# -gt 1 ]; do
		case $1 in --rows) r=$2 ;; --len) n=$2 ;; esac
		shift
	done
	echo "${r}x$n"
}
# bench NAME SECONDS ARGS...: one benchmark, its JSON line tagged with NAME
bench() {
	local name=$1 secs=$2 out rc
	shift 2
	fits "$secs" "bench $name $(shape_of "$@")" || return 0
	echo "# bench $name $*" >>"$LOG/bench-err.log"
	out=$(timeout "$(lim 120)" build/assoc bench "$@" --device gpu --json 2>"$LOG/err")
	rc=$?
	cat "$LOG/err" >>"$LOG/bench-err.log"
	if [ $rc = 0 ]; then
		echo "$out" | sed "s/^{/{\"name\": \"$name\", /" >>"$LOG/bench.jsonl"
		echo "$out"
	else
		note_fail "bench $name $(shape_of "$@"): $(tail -1 "$LOG/err")"
	fi
}
att="-D d=128 -D dv=128 --rows 8192 --len 8192 --heads 16"
dec="--rows 1 --len 32768 --heads 32 --kv-heads 8"
shapes="4096x4096 1024x32768 256x131072"

step "attention (bf16, 8k queries and keys, 16 heads; by the variants' rule: on sm_90 the Hopper template)"
path_ok "bench attention" hopper && bench attention 20 tests/attention/full_bf16.yaml $att
path_ok "bench attention_causal" hopper && bench attention_causal 20 tests/attention/causal_bf16.yaml $att
# the Hopper template's warp-specialized schedules beside it (the rule's is
# ws=0, every warpgroup computing): ws=1 a producer warpgroup and two
# consumers in turns, ws=2 also each tile's softmax under the last P V
for ws in 1 2; do
	path_ok "bench attention_ws$ws" ws$ws &&
		bench attention_ws$ws 20 tests/attention/full_bf16.yaml $att --config attention:wg=2,bn=128,st=2,ws=$ws
	path_ok "bench attention_causal_ws$ws" ws$ws &&
		bench attention_causal_ws$ws 20 tests/attention/causal_bf16.yaml $att --config attention:wg=2,bn=128,st=2,ws=$ws
done
# FP8 (e4m3 q, k and v, causal, descale factors as params): on sm_90 the Hopper
# template's e4m3 path, beside bf16's causal SDPA (PyTorch has no FP8 SDPA)
path_ok "bench attention_causal_fp8" fp8 && bench attention_causal_fp8 20 tests/attention/fp8_descale.yaml $att
# the mma.sync template at the configuration that was its rule's at head dim 128
bench attention_mma 20 tests/attention/full_bf16.yaml $att --config attention:nt=128,mt=2,bn=64,pv=1,st=2
path_ok "bench attention_d64" hopper &&
	bench attention_d64 20 tests/attention/full_bf16.yaml -D d=64 -D dv=64 --rows 8192 --len 8192 --heads 16
path_ok "bench attention_d256" hopper &&
	bench attention_d256 20 tests/attention/full_bf16.yaml -D d=256 -D dv=256 --rows 8192 --len 8192 --heads 16
step "decoding (bf16, one query, 32k keys, 32 query heads on 8 key/value heads, split KV; head dim 128, then 64 and 256)"
bench decoding 15 tests/attention/full_bf16.yaml -D d=128 -D dv=128 $dec
# decoding's variant before its three stages of 128 keys (two of 64, two blocks an SM),
# at the split its rule gave 8 key/value heads on 132 SMs: the two in one run
bench decoding_bn64 15 tests/attention/full_bf16.yaml -D d=128 -D dv=128 $dec --split 33 --config attention:nt=128,mt=1,bn=64,pv=1,st=2,ks=4
bench decoding_d64 15 tests/attention/full_bf16.yaml -D d=64 -D dv=64 $dec
bench decoding_d256 15 tests/attention/full_bf16.yaml -D d=256 -D dv=256 $dec
step "paged decoding (bf16, head dim 128, 32 query heads on 8 key/value heads: a batch of 8 sequences of up to 8192 keys in one launch, pages of 16 and 256) beside unpaged decoding of as many keys"
pdec="-D d=128 -D dv=128 --rows 1 --len 8192 --batch 8 --heads 32 --kv-heads 8"
bench decoding_paged16 25 tests/attention/full_bf16.yaml $pdec --page-size 16
bench decoding_paged256 25 tests/attention/full_bf16.yaml $pdec --page-size 256
# the batch is drawn from a fixed seed: every run of it reads these keys
pkeys=$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if "decoding_paged" in l]
print(r[-1]["keys"] if r else 0)' "$LOG/bench.jsonl" 2>/dev/null || echo 0)
[ "${pkeys:-0}" -gt 0 ] && bench decoding_unpaged 15 tests/attention/full_bf16.yaml -D d=128 -D dv=128 --rows 1 \
	--len "$pkeys" --heads 32 --kv-heads 8

step "paged chunked prefill (bf16, causal bottom-right, 17 queries a sequence packed [rows][heads] in and out, 4 heads on 2, pages of 16 and 256): checked, one launch"
if fits 40 "paged chunked prefill"; then
	for page in 16 256; do
		timeout "$(lim 60)" build/assoc run tests/attention/causal_bf16.yaml --device gpu --page-size $page \
			--rows 17 --len 300 --batch 4 --heads 4 --kv-heads 2 --verbose >"$LOG/prefill_paged$page.log" 2>&1 ||
			note_fail "paged chunked prefill, pages of $page: $(tail -3 "$LOG/prefill_paged$page.log")"
		grep -q "sequences in one launch" "$LOG/prefill_paged$page.log" ||
			note_fail "paged chunked prefill, pages of $page: not one launch"
	done
fi

step "PyTorch beside them"
if fits 60 "PyTorch"; then
	for d in 128 64 256; do
		timeout "$(lim 60)" python3 bench/torch_gpu.py --attention 16 8192 $d >>"$LOG/bench.jsonl" 2>>"$LOG/torch.log" ||
			echo "PyTorch SDPA (head dim $d) unavailable: $(tail -1 "$LOG/torch.log")"
	done
	timeout "$(lim 90)" python3 bench/torch_gpu.py $shapes 1024x50257 >>"$LOG/bench.jsonl" 2>>"$LOG/torch.log" ||
		echo "PyTorch unavailable: $(tail -1 "$LOG/torch.log")"
fi

step "softmax, Welford, logsumexp (by the variants' rule)"
for spec in online_softmax welford logsumexp; do
	for s in $shapes; do
		bench "$spec" 10 specs/$spec.yaml --rows "${s%x*}" --len "${s#*x}"
	done
done

step "vocabulary rows (1024 x 50257, an odd length; by the variants' rule)"
# three rows in four start off 16 bytes: each row's 16-byte loop begins
# past a head of up to 3 positions, as the copy's words do
bench online_softmax_vocab 10 specs/online_softmax.yaml --rows 1024 --len 50257
bench cross_entropy_vocab 10 specs/cross_entropy.yaml --rows 1024 --len 50257

step "rows across a thread-block cluster (cl, sm_90): the long shapes, beside the rule's above"
# maps keep 16 elements a thread on chip across the cluster (512 threads:
# 32768 positions at cl 4, 131072 at cl 16), so the row is read once;
# reductions split the row over 4 to 16 blocks for more bytes in flight.
# Layer norm's rule at these shapes is benched with the bf16 rows below.
for s in 1024x32768 256x131072; do
	path_ok "the cluster benchmarks at $s" cl16 || continue
	r=${s%x*} n=${s#*x}
	[ "$n" = 32768 ] && mcl=4 rcl=4 || mcl=16 rcl=8
	bench online_softmax_cl 10 specs/online_softmax.yaml --rows "$r" --len "$n" --config "rowmap:nt=512,acc=2,vec=4,items=16,cl=$mcl"
	bench layer_norm_cl 10 specs/layer_norm.yaml --rows "$r" --len "$n" --param eps=1e-5 --config "rowmap:nt=512,acc=2,vec=4,items=16,cl=$mcl"
	bench welford_cl 10 specs/welford.yaml --rows "$r" --len "$n" --config "rowreduce:nt=512,acc=4,vec=4,cl=$rcl"
	bench logsumexp_cl 10 specs/logsumexp.yaml --rows "$r" --len "$n" --config "rowreduce:nt=512,acc=4,vec=4,cl=$rcl"
	bench logsumexp_cl16 10 specs/logsumexp.yaml --rows "$r" --len "$n" --config "rowreduce:nt=512,acc=2,vec=4,un=2,cl=16"
done

step "rows streamed by bulk copies (bk, sm_90): the three shapes, beside the rule's above"
# a ring of 4 stages of 4 nt acc positions, 3 in flight while the block
# folds one: stages of 2048 at 4096 (two chunks a row, the map's row kept
# in the ring), of 4096 (reductions) and 8192 (maps, whose ring of 32768
# keeps the row of 32768 on chip and reads 131072 twice) past it
for s in $shapes; do
	path_ok "the bulk-copy benchmarks at $s" bk4 || continue
	r=${s%x*} n=${s#*x}
	[ "$n" = 4096 ] && map=nt=256,acc=2 red=nt=256,acc=2 || map=nt=512,acc=4 red=nt=256,acc=4
	bench online_softmax_bk 10 specs/online_softmax.yaml --rows "$r" --len "$n" --config "rowmap:$map,vec=4,bk=4"
	bench layer_norm_bk 10 specs/layer_norm.yaml --rows "$r" --len "$n" --param eps=1e-5 --config "rowmap:$map,vec=4,bk=4"
	bench welford_bk 10 specs/welford.yaml --rows "$r" --len "$n" --config "rowreduce:$red,vec=4,bk=4"
	bench logsumexp_bk 10 specs/logsumexp.yaml --rows "$r" --len "$n" --config "rowreduce:$red,vec=4,bk=4"
done

step "run --mpi on the GPU (where mpirun and an MPI build are)"
# one GPU: every rank on it, so NCCL (which refuses two ranks on one GPU)
# stages through the host past one rank; each run checks its outputs
if command -v mpirun >/dev/null && fits 60 "run --mpi on the GPU"; then
	mpi="timeout $(lim 60) mpirun --allow-run-as-root --oversubscribe -np"
	for spec in logsumexp welford; do
		for p in 1 2; do
			$mpi $p build/assoc run specs/$spec.yaml --device gpu --rows 64 --len 100000 --mpi --deterministic \
				--verbose --output "$( [ $spec = welford ] && echo var || echo lse )=$LOG/mpi-$spec-$p.npy" \
				>"$LOG/mpi-$spec-$p.log" 2>&1 || note_fail "run --mpi -np $p $spec on the GPU"
			grep -E "mpi:|staged|NCCL|  ok|FAIL|assoc:" "$LOG/mpi-$spec-$p.log" | head -5
		done
		cmp -s "$LOG/mpi-$spec-1.npy" "$LOG/mpi-$spec-2.npy" ||
			note_fail "run --mpi --deterministic $spec: 1 and 2 ranks differ"
	done
	$mpi 2 build/assoc run specs/logsumexp.yaml --device gpu --rows 64 --len 100000 --mpi --mpi-collective reduce \
		>"$LOG/mpi-reduce.log" 2>&1 || note_fail "run --mpi --mpi-collective reduce on the GPU"
	grep -E "mpi:|  ok|FAIL|assoc:" "$LOG/mpi-reduce.log" | head -3
	# attention's partial states, merged by its combine kernel
	$mpi 2 build/assoc run tests/attention/full.yaml --device gpu --rows 256 --len 32768 --mpi --verbose \
		>"$LOG/mpi-attention.log" 2>&1 || note_fail "run --mpi attention on the GPU"
	grep -E "mpi:|folds|  ok|FAIL|assoc:" "$LOG/mpi-attention.log" | head -4
fi

step "GPU test suite"
if [ -n "$tests_pid" ] && fits 90 "GPU test suite"; then
	if wait "$tests_pid"; then
		# ASan's shadow gap must stay unprotected for the CUDA driver (its
		# cuInit fails with out of memory otherwise); the driver's own
		# allocations are not this project's leaks
		ASAN_OPTIONS=protect_shadow_gap=0 LSAN_OPTIONS=detect_leaks=0 \
			timeout "$(lim 240)" build/asan/tests --filter 'gpu/*' -j"$(nproc)" --verbose >"$LOG/tests.log" 2>&1 ||
			note_fail "GPU tests"
		grep -E "Synthesis|FAIL|SKIP" "$LOG/tests.log" | grep -v "Test is disabled" | tail -20
		grep "SKIP" "$LOG/tests.log" | grep -qv "Test is disabled" && note_fail "GPU tests skipped on a GPU machine (above)"
	else
		echo "Criterion tests not built (see $LOG/build-tests.log)"
		tail -5 "$LOG/build-tests.log"
	fi
elif [ -n "$tests_pid" ]; then
	stop_tests # its build would take the cores from the tuning
fi

step "the Python package on CUDA tensors (where torch imports)"
if fits 60 "Python package"; then
	make -s build/libassoc.so >>"$LOG/build.log" 2>&1 &&
		PYTHONPATH=python timeout "$(lim 120)" python3 -m unittest -v python/tests/test_torch.py >"$LOG/python.log" 2>&1 ||
		note_fail "Python package on the GPU"
	grep -E "TorchCuda|^Ran|^OK|FAILED" "$LOG/python.log" | tail -6
fi

step "bf16 rows (the same carriers reading bfloat16), and layer norm at every shape"
# the bundled specs read float32; their bf16 twins are written here, with
# layer norm's float32 one (it reads bf16 as bundled)
for spec in online_softmax welford logsumexp; do
	sed 's/^element: {x: f32}/element: {x: bf16}/' specs/$spec.yaml >"$LOG/${spec}_bf16.yaml"
done
sed 's/^element: {x: bf16}/element: {x: f32}/' specs/layer_norm.yaml >"$LOG/layer_norm_f32.yaml"
for s in $shapes; do
	for spec in online_softmax welford logsumexp; do
		bench "${spec}_bf16" 10 "$LOG/${spec}_bf16.yaml" --rows "${s%x*}" --len "${s#*x}"
	done
	bench layer_norm 10 specs/layer_norm.yaml --rows "${s%x*}" --len "${s#*x}" --param eps=1e-5
	bench layer_norm_f32 10 "$LOG/layer_norm_f32.yaml" --rows "${s%x*}" --len "${s#*x}" --param eps=1e-5
done

step "carriers no test uses (bench/carriers/), by the variants' rule"
for spec in bench/carriers/*.yaml; do
	name=$(basename "$spec" .yaml)
	bench "user_$name" 8 "$spec" --rows 1024 --len 32768
done

step "tuning, then the same benchmarks with the tuner's choices"
# tune NAME SECONDS ARGS...: tune, timed, then bench again
tune() {
	local name=$1 secs=$2 t0 t1
	shift 2
	fits "$secs" "tune $name $(shape_of "$@")" || return 0
	t0=$(date +%s.%N)
	echo "# tune $name $*" >>"$LOG/tune.log"
	if ! timeout "$(lim 150)" build/assoc tune "$@" >>"$LOG/tune.log" 2>&1; then
		note_fail "tune $name $(shape_of "$@"): $(tail -1 "$LOG/tune.log")"
		return 0
	fi
	t1=$(date +%s.%N)
	echo "{\"tune\": \"$name\", \"shape\": \"$(shape_of "$@")\", \"seconds\": $(python3 -c "print(round($t1 - $t0, 2))")}" \
		>>"$LOG/bench.jsonl"
	grep -iE "choice|best|chose" "$LOG/tune.log" | tail -1
	bench "$name" 10 "$@"
}
# the tuning spaces hold the new paths' variants: a space with one whose
# preflight failed is not tuned
path_ok "tune attention" hopper ws1 ws2 && tune attention 60 tests/attention/full_bf16.yaml $att
path_ok "tune attention_causal" hopper ws1 ws2 && tune attention_causal 60 tests/attention/causal_bf16.yaml $att
tune decoding 45 tests/attention/full_bf16.yaml -D d=128 -D dv=128 $dec
for spec in online_softmax welford logsumexp; do
	for s in $shapes; do
		path_ok "tune $spec ${s}" cl16 bk4 && tune "$spec" 25 specs/$spec.yaml --rows "${s%x*}" --len "${s#*x}"
	done
done

step "the row templates' tiles: 2 loads an accumulator in flight (un=2), and the transported fold (tf=1)"
# beside the rule's and the tuner's choices above, at the shape between the
# short and the long rows (the tuner searches these and more at every
# shape); layer norm (bf16 in, two passes) by the rule and with both
rm_cfg="nt=512,acc=2,vec=4,un=2"
bench welford_tiles 10 specs/welford.yaml --rows 1024 --len 32768 --config "rowreduce:$rm_cfg"
bench welford_tf 10 specs/welford.yaml --rows 1024 --len 32768 --config "rowreduce:$rm_cfg,tf=1"
bench logsumexp_tiles 10 specs/logsumexp.yaml --rows 1024 --len 32768 --config "rowreduce:$rm_cfg"
bench logsumexp_tf 10 specs/logsumexp.yaml --rows 1024 --len 32768 --config "rowreduce:$rm_cfg,tf=1"
bench online_softmax_tiles 10 specs/online_softmax.yaml --rows 1024 --len 32768 --config "rowmap:$rm_cfg"
bench online_softmax_tf 10 specs/online_softmax.yaml --rows 1024 --len 32768 --config "rowmap:$rm_cfg,tf=1"
bench layer_norm_tf 10 specs/layer_norm.yaml --rows 1024 --len 32768 --param eps=1e-5 --config "rowmap:$rm_cfg,tf=1"

step "spec to PTX on this host's $(nproc) cores (bench/ptx_time.sh)"
fits 40 "ptx_time" && timeout "$(lim 60)" sh bench/ptx_time.sh specs/online_softmax.yaml 5 2>&1 | tail -5

step "carriers written from docs/spec-format.md alone (bench/carriers/more/, new/), as the budget allows"
for spec in bench/carriers/more/*.yaml bench/carriers/new/*.yaml; do
	bench "user_$(basename "$spec" .yaml)" 8 "$spec" --rows 1024 --len 32768
done

step "table (GB/s counts each input read once and each output written once)"
python3 - "$LOG/bench.jsonl" "$skipped" "$unrun" <<'PY' || cat "$LOG/bench.jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {(r["op"], r["rows"], r["len"]) + ((r["d"],) if r["op"].startswith("sdpa") else ()): r for r in rows if "op" in r}
tune = {(r["tune"], r["shape"]): r["seconds"] for r in rows if "tune" in r}
ours = [r for r in rows if "name" in r]
peer = {"online_softmax": "softmax", "welford": "var_mean", "logsumexp": "logsumexp"}
peer.update({f"{k}_{v}": p for k, p in list(peer.items()) for v in ("tiles", "tf", "cl", "cl16", "bk", "vocab")})
peer["cross_entropy_vocab"] = None
peer.update({"layer_norm": "layer_norm", "layer_norm_tf": "layer_norm", "layer_norm_f32": "layer_norm",
             "layer_norm_cl": "layer_norm", "layer_norm_bk": "layer_norm"})
peer.update({f"{k}_bf16": None for k in ("online_softmax", "welford", "logsumexp")})
peer.update({r["name"]: None for r in ours if r["name"].startswith("user_")})
how = lambda r: "tuned" if r["choice"].startswith("tuned") else "rule"
shape = lambda r: f"{r['rows']}x{r['len']}"
att = {}
for r in ours:
    if r["name"].startswith("attention"):
        d = int(r["name"].rsplit("_d", 1)[1]) if "_d" in r["name"] else 128
        p = torch.get(("sdpa_causal" if "causal" in r["name"] else "sdpa", r["rows"], r["len"], d), {}).get("tflops", 0)
        att[r["name"], how(r)] = r["tflops"]
        goal = "1.0 of SDPA" if "wg=" in r["config"] else "mma.sync"
        print(f"{r['name']:17} {shape(r)} x16 heads, d {d:3}, {how(r):5}: {r['tflops']:4.0f} TFLOP/s, torch SDPA {p:4.0f}"
              f" (ratio {r['tflops'] / p if p else 0:.2f}; goal {goal})  {r['config']}")
    elif r["name"].startswith("decoding_paged"):
        flat = next((u for u in ours if u["name"] == "decoding_unpaged"), None)
        rel = ", %.2f of unpaged decoding's GB/s" % (r["gbps"] / flat["gbps"]) if flat else ""
        bad = "" if r["match"] else " (results do NOT match)"
        print(f"{r['name']:17} {r['batch']} x <= {r['len']} keys ({r['keys']}), pages of {r['page_size']}, "
              f"x{r['heads']}/{r['kv_heads']} heads, one launch: {r['gbps']:5.0f} GB/s, {r['ratio_to_copy']:.2f} of copy"
              f"{rel}{bad}  {r['config']}")
    elif r["name"].startswith("decoding"):
        print(f"{r['name']:17} {shape(r)} x32/8 heads, {how(r):5}: {r['gbps']:5.0f} GB/s, {r['ratio_to_copy']:.2f}"
              f" of copy (goal 0.90)  {r['config']}")
for base in ("attention", "attention_causal"):
    for ws in (1, 2):
        if (f"{base}_ws{ws}", "rule") in att and (base, "rule") in att:
            print(f"{base}_ws{ws} / {base} (schedule ws={ws} / ws=0) TFLOP/s: "
                  f"{att[f'{base}_ws{ws}', 'rule'] / att[base, 'rule']:.2f}")
for h in ("rule", "tuned"):
    if ("attention", h) in att and ("attention_causal", h) in att:
        print(f"causal / non-causal TFLOP/s, {h}: {att['attention_causal', h] / att['attention', h]:.2f} (goal 0.9 or more)")
print(f"{'carrier':24} {'shape':>11} {'choice':>6} {'assoc':>6} {'copy':>6} {'/copy':>6} {'torch':>6} {'/torch':>7}"
      f" {'tune s':>7} {'warm ms':>8}  config")
for r in ours:
    if r["name"] not in peer:
        continue
    t = torch.get((peer[r["name"]], r["rows"], r["len"]), {}).get("gbps") if peer[r["name"]] else None
    print(f"{r['name']:24} {shape(r):>11} {how(r):>6} {r['gbps']:6.0f} {r['copy_gbps']:6.0f} {r['ratio_to_copy']:6.2f} "
          f"{(t or 0):6.0f} {(r['gbps'] / t if t else 0):7.2f} {tune.get((r['name'], shape(r)), 0) if how(r) == 'tuned' else 0:7.2f} "
          f"{r['module_ms'] if r['module_cached'] else float('nan'):8.1f}  {r['config']}")
if sys.argv[2]:
    print("skipped for time:" + sys.argv[2][1:])
if sys.argv[3]:
    print("skipped, their path's preflight failed:" + sys.argv[3][1:])
PY
echo
echo "total $(($(date +%s) - start)) s; log in $LOG; $([ $fail = 0 ] && echo ALL OK || echo SOME FAILED)"
exit $fail
