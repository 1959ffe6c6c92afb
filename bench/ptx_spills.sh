#!/bin/sh
# ptx_spills.sh: every kernel of every carrier's tuning space, assembled by
# ptxas for sm_90a and sm_80 (ARCHS), listed where it spills or keeps a
# stack (bench/ptx_spills.c; ALONE=1: each variant compiled alone, as a
# run compiles it, rather than the space in one program, as the tuner
# does).  The carriers: the specs under specs/, tests/ and bench/carriers/
# with a merge (the others are loops or bad specs), those check refuses
# included.  One process an arch, in parallel.  Prints the spilling
# kernels, then how many kernels each arch has and how many of them
# spill; the full table goes to build/bench/ptx_spills.ARCH.tsv.  Needs
# NVRTC and ptxas; the first run takes tens of minutes on two cores
# (NVRTC's cache keeps the PTX for the next).
# Usage: [ARCHS="sm_90a sm_80"] [ALONE=1] bench/ptx_spills.sh [SPEC...]
set -e
cd "$(dirname "$0")/.."
command -v llvm-config >/dev/null || nollvm=NO_LLVM=1 # as tests/gpu/check.sh builds
make -s ${nollvm:-} build/libassoc.a
mkdir -p build/bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I. -o build/bench/ptx_spills bench/ptx_spills.c build/libassoc.a -lyaml -lm -ldl -lpthread
if [ $# -eq 0 ]; then
	set -- $(find specs tests bench/carriers -name '*.yaml' | sort | xargs grep -l '^merge:')
fi
alone=
[ "${ALONE:-0}" = 1 ] && alone=--alone
pids=
for a in ${ARCHS:-sm_90a sm_80}; do
	build/bench/ptx_spills $alone "$a" "$@" >"build/bench/ptx_spills.$a.tsv" &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p" || true # 1: some kernel spills, which the table says
done
for a in ${ARCHS:-sm_90a sm_80}; do
	awk -F'\t' 'NF == 9 && $7 + $8 + $9 > 0' "build/bench/ptx_spills.$a.tsv"
done
for a in ${ARCHS:-sm_90a sm_80}; do
	awk -F'\t' -v a="$a" 'NF == 9 { n++; s += $7 + $8 + $9 > 0 }
		END { printf "%s: %d kernels, %d with spills or a stack\n", a, n, s }' "build/bench/ptx_spills.$a.tsv"
done
