#!/usr/bin/env bash
# all.sh: `make test` a line a step: the build (its warnings and errors in
# full), the Criterion suites (a line a suite, failures in full), every
# bundled spec checked, the Python package's tests (tests/python.sh), the
# fuzz smoke run; the total time; and the count of tests last.  Logs stay
# under build/.
set -u
cd "$(dirname "$0")/.."
start=$(date +%s)
rc=0
mkdir -p build
rm -f build/tests.counts
elapsed() { echo $(($(date +%s) - $1)); }
summary() {
	local t p f s
	t=$(elapsed "$start")
	read -r p f s <build/tests.counts 2>/dev/null || { p=0; f=1; s=0; }
	echo "make test: $((t / 60))m $((t % 60))s in all"
	echo "tests: $p passed, $f failed, $s skipped"
}

t=$(date +%s)
# the MPI example and the device states' check where Open MPI is
# installed (tests/test_mpi.c runs them)
mpi_example=$(command -v mpicc >/dev/null && echo build/mpi_attention build/mpi_device_states)
if ! make --no-print-directory -s -j2 build/asan/tests build/asan/assoc build/assoc build/libassoc.so \
	build/libassoc-api.a $mpi_example >build/build.log 2>&1; then
	echo "build: FAILED (build/build.log, whole):"
	cat build/build.log
	summary
	exit 1
fi
echo "build: $(elapsed "$t") s, $(grep -c 'warning:' build/build.log) warnings"
grep -A3 'warning:' build/build.log

# NumPy's interpreter first: the MPI suite runs the Python example with it
tests/python.sh --prepare >/dev/null 2>&1

t=$(date +%s)
echo "suites:"
tests/suites.sh build/asan/tests || rc=1
echo "suites: $(elapsed "$t") s"

# The fuzz run, its build first, beside the bundled specs and the Python
# tests: those keep one core each, and the fuzzers start one process each.
tf=$(date +%s)
make --no-print-directory -s -j2 fuzz >build/fuzz-step.log 2>&1 &
fuzz=$!

t=$(date +%s)
specs=(specs/*.yaml tests/format/*.yaml)
specs+=(docs/examples/*.yaml)
if build/asan/assoc check "${specs[@]}" >build/check-specs.log 2>&1; then
	echo "check-specs: ${#specs[@]} specs ok, $(elapsed "$t") s"
else
	echo "check-specs: FAILED (build/check-specs.log, whole):"
	cat build/check-specs.log
	rc=1
fi

# the Python package (python/) over build/libassoc.so; its counts join the suites'
tests/python.sh || rc=1
read -r p f s <build/tests.counts 2>/dev/null || { p=0; f=1; s=0; }
read -r pp pf ps <build/python.counts 2>/dev/null || { pp=0; pf=1; ps=0; }
echo "$((p + pp)) $((f + pf)) $((s + ps))" >build/tests.counts

if wait "$fuzz"; then
	echo "fuzz: $(grep -E '^Done' build/fuzz-step.log | paste -sd';'), $(elapsed "$tf") s from the specs' start"
else
	echo "fuzz: FAILED (build/fuzz-step.log, whole):"
	cat build/fuzz-step.log
	rc=1
fi

summary
exit $rc
