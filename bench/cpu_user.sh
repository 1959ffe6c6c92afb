#!/bin/sh
# Carriers written as a user would (bench/carriers/) on the CPU, each as
# `assoc bench --json` reports it: kernel GB/s over a threaded memcpy of
# the same bytes in the same run.  The machine is shared: RUNS sets how
# many times each runs (default 2), and the best ratio is kept.
# Usage: bench/cpu_user.sh [ROWS [LEN]]   (defaults 256 65536)
set -e
cd "$(dirname "$0")/.."
ROWS=${1:-256}
LEN=${2:-65536}
RUNS=${RUNS:-2}
ASSOC=${ASSOC:-build/assoc}
printf '%-22s %8s %8s %8s  %s\n' carrier GB/s copy ratio runs
for spec in bench/carriers/*.yaml specs/online_softmax.yaml; do
	best=""
	all=""
	r=0
	while [ "$r" -lt "$RUNS" ]; do
		line=$("$ASSOC" bench "$spec" --device cpu --rows "$ROWS" --len "$LEN" --json) || {
			echo "$spec: bench failed" >&2
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
	printf '%-22s %8s %8s %8s  %s\n' "$(basename "$spec" .yaml)" "$gb" "$cgb" "$best" "$all"
done
