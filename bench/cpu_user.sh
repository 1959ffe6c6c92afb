#!/bin/sh
# Carriers written as a user would (bench/carriers/, and under more/ and
# new/ the ones written from docs/spec-format.md alone: histogram bins, a
# first match, min and max with positions, norms, scans, RMSNorm,
# softmax's moments; Kadane's maximum subarray, a segmented sum, a 2-vector
# affine recurrence, co-moments, local peaks, 8 bins a row bounds, a
# signed log-product, a decayed mean) on the CPU, each as
# `assoc bench --json` reports it: kernel GB/s over a threaded memcpy of
# the same bytes in the same run.  The machine is shared: RUNS sets how
# many times each runs (default 2), and the best ratio is kept.  ops/B is
# the carrier's operations per byte moved and bound what the copy's
# bandwidth leaves time for (assoc bench's nominal compute ceiling), both
# of the best run: past the bound the copy's speed is out of reach.  A
# carrier whose reduce folds in one lane says why after its runs.  What
# the benches say on stderr (a law the prover leaves unknown) goes to
# build/bench/cpu_user.log, named after the table, so the rows stay whole.
# Usage: bench/cpu_user.sh [ROWS [LEN]]   (defaults 256 65536)
set -e
cd "$(dirname "$0")/.."
ROWS=${1:-256}
LEN=${2:-65536}
RUNS=${RUNS:-2}
ASSOC=${ASSOC:-build/assoc}
log=build/bench/cpu_user.log
mkdir -p build/bench
: >"$log"
printf '%-22s %8s %8s %8s %7s %7s  %s\n' carrier GB/s copy ratio ops/B bound runs
for spec in bench/carriers/*.yaml bench/carriers/more/*.yaml bench/carriers/new/*.yaml specs/online_softmax.yaml; do
	best=""
	all=""
	r=0
	while [ "$r" -lt "$RUNS" ]; do
		line=$("$ASSOC" bench "$spec" --device cpu --rows "$ROWS" --len "$LEN" --json 2>>"$log") || {
			echo "$spec: bench failed:" >&2
			cat "$log" >&2
			exit 1
		}
		ratio=$(printf '%s\n' "$line" | sed -n 's/.*"ratio_to_copy": \([0-9.]*\).*/\1/p')
		all="$all $ratio"
		if [ -z "$best" ] || awk "BEGIN { exit !($ratio > $best) }"; then
			best=$ratio
			gb=$(printf '%s\n' "$line" | sed -n 's/.*"gbps": \([0-9.]*\),.*/\1/p')
			cgb=$(printf '%s\n' "$line" | sed -n 's/.*"copy_gbps": \([0-9.]*\).*/\1/p')
			opb=$(printf '%s\n' "$line" | sed -n 's/.*"ops_per_byte": \([0-9.]*\).*/\1/p')
			bound=$(printf '%s\n' "$line" | sed -n 's/.*"ops_per_byte_at_copy": \([0-9.]*\).*/\1/p')
			why=$(printf '%s\n' "$line" | sed -n 's/.*"one_lane": "\([^"]*\)".*/\1/p')
		fi
		r=$((r + 1))
	done
	printf '%-22s %8s %8s %8s %7s %7s  %s%s\n' "$(basename "$spec" .yaml)" "$gb" "$cgb" "$best" "$opb" "$bound" "$all" \
		"${why:+  (one lane: $why)}"
done
[ -s "$log" ] && echo "the benches' warnings ($(sort -u "$log" | wc -l)): $log"
exit 0
