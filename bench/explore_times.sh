#!/bin/sh
# explore_times.sh: a table of assoc explore's wall time per shipped loop
# (optimized build, best of 3), with the strategy that found the carrier.
# Each loop should take under 5 seconds.  Usage: bench/explore_times.sh [loop.yaml ...]
set -e
cd "$(dirname "$0")/.."
make -s build/assoc > /dev/null 2>&1 || make build/assoc
if [ $# -eq 0 ]; then set -- specs/loops/*.yaml; fi
printf '%-36s %9s  %s\n' loop seconds outcome
for f in "$@"; do
	best=
	for run in 1 2 3; do
		t0=$(date +%s.%N)
		out=$(build/assoc explore "$f" 2>&1) || true
		t1=$(date +%s.%N)
		t=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
	done
	outcome=$(printf '%s\n' "$out" | sed -n 's/^  carrier: [^ ]* by \([^;]*\);.*/\1/p')
	[ -n "$outcome" ] || outcome=$(printf '%s\n' "$out" | grep -q 'cannot be split' && echo 'cannot be split' || echo 'none found')
	printf '%-36s %9.3f  %s\n' "$f" "$best" "$outcome"
done
