#!/bin/sh
# ptx_time.sh: spec to PTX for online softmax (goal: under 100 ms warm).
# Prints the median of several runs of `assoc emit --target ptx`, all the
# tuning variants in one NVRTC program: compiled (a fresh PTX cache each
# run, NVRTC's library warm in the page cache) and from the disk cache;
# then the one variant a run compiles (`emit --config` of the variant the
# rules pick for ROWS x LEN), and `assoc run --device gpu` itself through
# the fake driver (build/libfakecuda.so, which runs no kernel: the time is
# the spec's checks, the compile and the load); then the same steps inside
# one process where NVRTC is loaded and has compiled once
# (bench/ptx_warm.c), as a program that generates kernels as it goes sees
# them.  The one variant's compile is split into NVRTC's phases as NVRTC
# 12.x and later time them (ASSOC_NVRTC_TIME).  Not a test; needs NVRTC.
# Last figures (docs/performance.md, "Spec to PTX"): 102 ms for the one variant on a
# quiet 2-vCPU EPYC (2026-12-05); on 2026-12-06, at a load of 4 to 5 on
# the same machine, 218-228 ms, where only callgrind's count of NVRTC's
# instructions (496.8M, from 505.6M) could tell builds apart.
# Usage: [ASSOC=binary] bench/ptx_time.sh [SPEC] [RUNS] [ROWS] [LEN]
set -e
cd "$(dirname "$0")/.."
command -v llvm-config >/dev/null || nollvm=NO_LLVM=1 # as tests/gpu/check.sh builds
make -s ${nollvm:-} build/assoc build/libassoc.a build/libfakecuda.so
mkdir -p build/bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I. -o build/bench/ptx_warm bench/ptx_warm.c build/libassoc.a -lyaml -lm -ldl -lpthread
assoc=${ASSOC:-build/assoc} # ASSOC=another build of assoc, to time it the same way
spec=${1:-specs/online_softmax.yaml}
runs=${2:-7}
rows=${3:-64}
len=${4:-4096}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ms() { # median wall time in ms of "$@" over $runs runs, a fresh cache each when FRESH=1
	i=0
	while [ $i -lt "$runs" ]; do
		[ "$FRESH" = 1 ] && rm -rf "$tmp/cache"
		s=$(date +%s%N)
		XDG_CACHE_HOME="$tmp/cache" "$@" >/dev/null 2>&1 || [ "$MAYFAIL" = 1 ] # the fake driver's runs fail their check
		e=$(date +%s%N)
		echo $(((e - s) / 1000000))
		i=$((i + 1))
	done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

phases() { # medians of NVRTC's front end and NVVM times (ASSOC_NVRTC_TIME) over $runs fresh compiles of "$@"
	rm -f "$tmp/phases.csv"
	i=0
	while [ $i -lt "$runs" ]; do
		rm -rf "$tmp/cache"
		XDG_CACHE_HOME="$tmp/cache" ASSOC_NVRTC_TIME="$tmp/phases.csv" "$@" >/dev/null 2>&1
		i=$((i + 1))
	done
	for p in 'CUDA C++ Frontend' 'NVVM Optimizer'; do
		grep ", $p, " "$tmp/phases.csv" 2>/dev/null | awk -F', ' '{print $3}' | sort -n |
			awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : "?")}'
	done | tr '\n' ' '
}

inrun() { # median of the compile and load time a run reports (--verbose), a fresh cache each when FRESH=1
	i=0
	while [ $i -lt "$runs" ]; do
		[ "$FRESH" = 1 ] && rm -rf "$tmp/cache"
		XDG_CACHE_HOME="$tmp/cache" $fake $assoc run "$spec" --device gpu --rows "$rows" --len "$len" --verbose 2>&1 |
			sed -n 's/^gpu: .* in \([0-9]*\) ms$/\1/p'
		i=$((i + 1))
	done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

XDG_CACHE_HOME="$tmp/cache" $assoc emit "$spec" --target ptx -o /dev/null # warm NVRTC's pages
compiled=$(FRESH=1 ms $assoc emit "$spec" --target ptx -o -)
cached=$(FRESH=0 ms $assoc emit "$spec" --target ptx -o -)
split=$(FRESH=1 ms env ASSOC_NVRTC_SPLIT=1 $assoc emit "$spec" --target ptx -o -)
cuda=$(FRESH=1 ms $assoc emit "$spec" --target cuda -o -)
variants=$(XDG_CACHE_HOME="$tmp/cache" $assoc emit "$spec" --target cuda | grep -c '^extern "C" __global__' || true)
# the variant a run takes for the shape: its line of `run -v` through the fake driver
fake="env ASSOC_LIBCUDA=build/libfakecuda.so FAKECUDA="
pick=$(XDG_CACHE_HOME="$tmp/cache" $fake $assoc run "$spec" --device gpu --rows "$rows" --len "$len" --verbose 2>&1 |
	sed -n 's/^gpu: \([^ ]*\) .*/\1/p' | head -1)
echo "spec to PTX, $spec, $variants kernels in one NVRTC program (emit --target ptx):"
echo "  compiled:        $compiled ms (median of $runs)"
echo "  compiled, NVVM split over $(nproc) cores (ASSOC_NVRTC_SPLIT=1): $split ms"
echo "  from the cache:  $cached ms"
echo "  spec to CUDA C:  $cuda ms (laws checked, no NVRTC)"
if [ -n "$pick" ]; then
	one=$(FRESH=1 ms $assoc emit "$spec" --target ptx --config "$pick" -o -)
	onec=$(FRESH=0 ms $assoc emit "$spec" --target ptx --config "$pick" -o -)
	run=$(MAYFAIL=1 FRESH=1 ms $fake $assoc run "$spec" --device gpu --rows "$rows" --len "$len")
	runc=$(MAYFAIL=1 FRESH=0 ms $fake $assoc run "$spec" --device gpu --rows "$rows" --len "$len")
	echo "the one variant a run compiles for $rows x $len ($pick):"
	echo "  compiled:        $one ms (emit --config)"
	echo "  from the cache:  $onec ms"
	echo "  run --device gpu, fake driver: $run ms compiled, $runc ms from the cache (the whole command)"
	echo "  of which compiling and loading: $(FRESH=1 inrun) ms compiled, $(FRESH=0 inrun) ms from the cache"
	set -- $(phases $assoc emit "$spec" --target ptx --config "$pick" -o -)
	echo "  NVRTC's phases (its --time): front end $1 ms, NVVM (optimizer and PTX) $2 ms"
else
	echo "(no variant named by run -v through build/libfakecuda.so: the one-variant path is not timed)"
fi
build/bench/ptx_warm "$spec" "$runs"
