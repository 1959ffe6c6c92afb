#!/bin/sh
# ptx_time.sh: spec to PTX for online softmax, all its tuning variants in one
# NVRTC program (goal: under 100 ms warm).  Prints the median of several
# runs of `assoc emit --target ptx`: compiled (a fresh PTX cache each run,
# NVRTC's library warm in the page cache) and from the disk cache; then the
# same steps inside one process where NVRTC is loaded and has compiled
# once (bench/ptx_warm.c), as a program that generates kernels as it goes
# sees them.  Not a test; needs NVRTC.  Usage: bench/ptx_time.sh [SPEC] [RUNS]
set -e
cd "$(dirname "$0")/.."
command -v llvm-config >/dev/null || nollvm=NO_LLVM=1 # as tests/gpu/check.sh builds
make -s ${nollvm:-} build/assoc build/libassoc.a
mkdir -p build/bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I. -o build/bench/ptx_warm bench/ptx_warm.c build/libassoc.a -lyaml -lm -ldl -lpthread
spec=${1:-specs/online_softmax.yaml}
runs=${2:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ms() { # median wall time in ms of "$@" over $runs runs, a fresh cache each when FRESH=1
	i=0
	while [ $i -lt "$runs" ]; do
		[ "$FRESH" = 1 ] && rm -rf "$tmp/cache"
		s=$(date +%s%N)
		XDG_CACHE_HOME="$tmp/cache" "$@" >/dev/null
		e=$(date +%s%N)
		echo $(((e - s) / 1000000))
		i=$((i + 1))
	done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

XDG_CACHE_HOME="$tmp/cache" build/assoc emit "$spec" --target ptx -o /dev/null # warm NVRTC's pages
compiled=$(FRESH=1 ms build/assoc emit "$spec" --target ptx -o -)
cached=$(FRESH=0 ms build/assoc emit "$spec" --target ptx -o -)
split=$(FRESH=1 ms env ASSOC_NVRTC_SPLIT=1 build/assoc emit "$spec" --target ptx -o -)
cuda=$(FRESH=1 ms build/assoc emit "$spec" --target cuda -o -)
variants=$(XDG_CACHE_HOME="$tmp/cache" build/assoc emit "$spec" --target cuda | grep -c '^extern "C" __global__' || true)
echo "spec to PTX, $spec, $variants kernels in one NVRTC program:"
echo "  compiled:        $compiled ms (median of $runs)"
echo "  compiled, NVVM split over $(nproc) cores (ASSOC_NVRTC_SPLIT=1): $split ms"
echo "  from the cache:  $cached ms"
echo "  spec to CUDA C:  $cuda ms (laws checked, no NVRTC)"
build/bench/ptx_warm "$spec" "$runs"
