#!/bin/sh
# cpu_decode.sh: attention decoding on the CPU, one query row a head
# against KEYS keys (default 32768), as `assoc bench --json` lines: head
# dims 64, 128 and 256; 4 and 8 query heads a key/value head (32 on 8, 64
# on 8) and one each (8 on 8); f16 and f32 inputs
# (tests/attention/full.yaml, full_f32.yaml); and 4 a key/value head as
# one row a head (--config rows=1).  Each line the best of REPS runs
# (default 3) by ratio_to_copy.  With OLD=plugin.so, each run alternates
# with a run of that CPU backend (ASSOC_LLVM_PLUGIN), in the same minutes,
# and each line gives both: "new" and "old".
#   [ASSOC=binary] [OLD=old-assoc-llvm.so] bench/cpu_decode.sh [KEYS]
set -eu
KEYS=${1:-32768}
REPS=${REPS:-3}
cd "$(dirname "$0")/.."
A=${ASSOC:-build/assoc}
best() { # the line of the best ratio_to_copy on standard input
	python3 -c 'import json, sys
ls = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(json.dumps(max(ls, key=lambda a: a["ratio_to_copy"])) if ls else "{}")'
}
for t in f16:full f32:full_f32; do
	ty=${t%%:*} spec=tests/attention/${t#*:}.yaml
	for d in 64 128 256; do
		for hk in "32 8 -" "64 8 -" "8 8 -" "32 8 rows=1"; do
			set -- $hk
			cfg=""
			[ "$3" = - ] || cfg="--config $3"
			args="--rows 1 --len $KEYS --heads $1 --kv-heads $2 -D d=$d -D dv=$d $cfg --json"
			new="" old=""
			r=0
			while [ $r -lt "$REPS" ]; do
				new="$new$($A bench $spec --device cpu $args)
"
				[ -z "${OLD:-}" ] || old="$old$(ASSOC_LLVM_PLUGIN=$OLD $A bench $spec --device cpu $args)
"
				r=$((r + 1))
			done
			head="\"type\": \"$ty\", \"d\": $d, \"shape\": \"$1/$2\", \"config\": \"$3\""
			printf '%s' "$new" | best | sed "s#^{#{$head, \"which\": \"new\", #"
			[ -z "${OLD:-}" ] || printf '%s' "$old" | best | sed "s#^{#{$head, \"which\": \"old\", #"
		done
	done
done
