#!/bin/sh
# prove_times.sh: a table of the symbolic prover's time per bundled spec
# (optimized build, best of 5).  Usage: bench/prove_times.sh [spec.yaml ...]
set -e
cd "$(dirname "$0")/.."
make -s build/libassoc.a
mkdir -p build/bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I. -o build/bench/prove_times bench/prove_times.c build/libassoc.a -lyaml -lm
if [ $# -eq 0 ]; then set -- specs/*.yaml; fi
build/bench/prove_times "$@"
