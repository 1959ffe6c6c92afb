#!/usr/bin/env bash
# python.sh: the Python package's tests (python/tests, unittest) against
# build/libassoc.so, with PYTHONPATH=python.  The interpreter: $PYTHON,
# else a python3 that imports NumPy, else a virtual environment made under
# build/python-venv with NumPy from PyPI.  Prints "python: N passed, N
# skipped, T s", each reason for a skip, failures in full; the counts go
# to build/python.counts ("passed failed skipped").  Exit 0 when none failed.
# With --prepare, only find or make the interpreter.
set -u
cd "$(dirname "$0")/.."
start=$(date +%s)
mkdir -p build
log=build/python-tests.log
counts=build/python.counts
echo "0 1 0" >"$counts"
failed() {
	echo "python: FAILED ($1; $log, whole):"
	cat "$log"
	exit 1
}
: >"$log"
[ -f build/libassoc.so ] || failed "no build/libassoc.so: make build/libassoc.so"
py=
for c in "${PYTHON:-}" python3 build/python-venv/bin/python; do
	if [ -n "$c" ] && command -v "$c" >/dev/null && "$c" -c 'import numpy' >>"$log" 2>&1; then
		py=$c
		break
	fi
done
if [ -z "$py" ]; then
	command -v python3 >/dev/null || failed "no python3"
	echo "making build/python-venv with NumPy" >>"$log"
	python3 -m venv build/python-venv >>"$log" 2>&1 || failed "python3 -m venv failed"
	build/python-venv/bin/python -m pip install -q --disable-pip-version-check numpy >>"$log" 2>&1 ||
		failed "pip install numpy failed"
	py=build/python-venv/bin/python
fi
# --prepare: the interpreter only, made before the suites, whose MPI test
# runs the package's example under it
[ "${1:-}" = --prepare ] && exit 0
# unittest's own runner, its counts and reasons printed the way the
# other steps print theirs
PYTHONPATH=python ASSOC_LIBRARY=$PWD/build/libassoc.so "$py" -X faulthandler -c '
import sys, unittest
log, counts = sys.argv[1], sys.argv[2]
suite = unittest.TestLoader().discover("python/tests", top_level_dir="python/tests")
with open(log, "a") as f:
    res = unittest.TextTestRunner(stream=f, verbosity=2).run(suite)
bad = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
skipped = len(res.skipped)
with open(counts, "w") as f:
    print(res.testsRun - bad - skipped - len(res.expectedFailures), bad, skipped, file=f)
why = {}
for test, reason in res.skipped:
    why.setdefault(reason, []).append(test.id())
for reason, tests in why.items():
    print("  skipped (%d): %s (%s)" % (len(tests), reason, tests[0] + (", ..." if len(tests) > 1 else "")))
sys.exit(1 if bad or not res.testsRun else 0)
' "$log" "$counts" >build/python-skips.log 2>>"$log"
rc=$?
read -r p f s <"$counts"
if [ "$rc" != 0 ]; then
	echo "python: $p passed, $f FAILED, $s skipped, $(($(date +%s) - start)) s ($py; $log, whole):"
	cat "$log"
	cat build/python-skips.log
	exit 1
fi
echo "python: $p passed, $s skipped, $(($(date +%s) - start)) s"
cat build/python-skips.log
exit 0
