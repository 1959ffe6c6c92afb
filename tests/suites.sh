#!/usr/bin/env bash
# suites.sh BINARY [FILTER|--quick]: run the Criterion suites (--quick: but
# the tests in tests/slow.txt), print a line a suite
# and every failure in full; the counts go to build/tests.counts
# ("passed failed skipped") for the closing line.  Exit 0 when none failed.
set -u
bin=$1
filter=${2:-}
if [ "$filter" = --quick ]; then
	# every test but those in tests/slow.txt, grouped by suite
	# (suite/@(a|b)|...): Criterion's pattern matcher fails on a long list
	filter="!($(grep -v '^#' tests/slow.txt | awk -F/ 'NF == 2 {
		a[$1] = a[$1] (a[$1] ? "|" : "") $2 }
		END { for (s in a) printf "%s%s/@(%s)", (n++ ? "|" : ""), s, a[s] }'))"
fi
tap=build/tests.tap
log=build/tests.log
args=(--jobs 2 --tap="$tap")
[ -n "$filter" ] && args+=(--filter="$filter")
LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp "$bin" "${args[@]}" >"$log" 2>&1
rc=$?
# A filtered-out test is reported "# SKIP test was skipped"; it did not run.
awk '
/^# Running [0-9]+ tests from / { suite = $NF; next }
/^(not )?ok - / {
	if ($0 ~ /# SKIP test was skipped$/) next
	if (!(suite in seen)) { seen[suite] = 1; order[n++] = suite }
	t = 0
	if (match($0, /\(([0-9.]+)s\)/)) t = substr($0, RSTART + 1, RLENGTH - 3)
	secs[suite] += t
	if ($0 ~ /^not ok/) failed[suite]++
	else if ($0 ~ / # SKIP/) skipped[suite]++
	else passed[suite]++
}
END {
	for (i = 0; i < n; i++) {
		s = order[i]
		line = sprintf("  %-10s %4d passed", s, passed[s])
		if (failed[s]) line = line sprintf(", %d FAILED", failed[s])
		if (skipped[s]) line = line sprintf(", %d skipped", skipped[s])
		printf "%s%*s%6.1f s\n", line, 44 - length(line), "", secs[s]
		P += passed[s]; F += failed[s]; S += skipped[s]
	}
	print P, F, S > "build/tests.counts"
}' "$tap"
# the skips say why: a test that cannot run here is not a pass
grep -E '^ok - .* # SKIP ' "$tap" | grep -v '# SKIP test was skipped$' | sed 's/^ok - /  skipped: /'
crashed=$(grep -c '^\[----\].*[Cc]rash' "$log")
if [ "$rc" != 0 ] || grep -q '^not ok' "$tap" || [ "$crashed" != 0 ]; then
	echo "failures (build/tests.log, whole):"
	cat "$log"
	[ -s build/tests.counts ] || echo "0 1 0" >build/tests.counts
	exit 1
fi
exit 0
