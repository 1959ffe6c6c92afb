#!/bin/sh
# The bundled row carriers on the CPU, each as `assoc bench --json`
# reports it: kernel GB/s over a threaded memcpy of the same bytes in the
# same run, the best ratio of RUNS runs (default 3; each the median of 7).
# Shapes: 256 x 65536 (layer norm reads bfloat16, the others float32) and
# MoE routing over 256 experts, 65536 tokens.  Other work on the machine
# shows as a spread of the runs' ratios (printed after the best) and as
# a copy slower than the machine's own.
# Usage: [RUNS=n] [ASSOC=binary] bench/cpu_rows.sh
set -e
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
ASSOC=${ASSOC:-build/assoc}
printf '%-18s %-12s %8s %8s %8s  %s\n' carrier shape GB/s copy ratio runs
for job in "online_softmax 256 65536" "welford 256 65536" "logsumexp 256 65536" "layer_norm 256 65536" \
	"moe_topk_routing 65536 256"; do
	set -- $job
	best=""
	all=""
	r=0
	while [ "$r" -lt "$RUNS" ]; do
		line=$("$ASSOC" bench "specs/$1.yaml" --device cpu --rows "$2" --len "$3" --json) || {
			echo "$1: bench failed" >&2
			exit 1
		}
		ratio=$(printf '%s\n' "$line" | sed -n 's/.*"ratio_to_copy": \([0-9.]*\).*/\1/p')
		all="$all $ratio"
		if [ -z "$best" ] || awk "BEGIN { exit !($ratio > $best) }"; then
			best=$ratio
			gb=$(printf '%s\n' "$line" | sed -n 's/.*"gbps": \([0-9.]*\),.*/\1/p')
			cgb=$(printf '%s\n' "$line" | sed -n 's/.*"copy_gbps": \([0-9.]*\).*/\1/p')
		fi
		r=$((r + 1))
	done
	printf '%-18s %-12s %8s %8s %8s  %s\n' "$1" "$2x$3" "$gb" "$cgb" "$best" "$all"
done
