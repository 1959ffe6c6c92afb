/* test_cli.c: the assoc command line (build/asan/assoc): exit status,
 * output lines, JSON, usage errors. */
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/npy.h"
#include "compiler/devices/run.h"
#include "testutil.h"

#define ASSOC "build/asan/assoc"

/* Run a command, capture stdout (and stderr when err is set); return its exit status. */
static char out[1 << 16];

Test(cli, check_passing_spec)
{
	cr_assert_eq(sh(ASSOC " check specs/online_softmax.yaml", out, sizeof out, 0), 0);
	cr_assert(strstr(out, "specs/online_softmax.yaml: carrier online_softmax"), "%s", out);
	cr_assert(strstr(out, "  associative: proved (transport into (max, +)); holds in 20000 trials\n"), "%s", out);
	cr_assert(strstr(out, "  commutative: proved (transport into (max, +)); holds in 20000 trials\n"), "%s", out);
	cr_assert(strstr(out, "  identity: proved ("), "%s", out);
	cr_assert(strstr(out, "  certificate: proved (phi(a+b) = phi(a)*phi(b)"), "%s", out);
	cr_assert(strstr(out, "  reference: matches on"), "%s", out);
	cr_assert(strstr(out, "  float32 error: lse "), "%s", out);
	cr_assert(strstr(out, "\n  ok ("), "%s", out);
}

/* Rows holding NaN and infinities: one line where everything agrees; a
 * warning with its witness where a grouping differs, and still ok. */
Test(cli, check_says_what_special_values_do)
{
	cr_assert_eq(sh(ASSOC " check specs/online_softmax.yaml", out, sizeof out, 0), 0);
	cr_assert(strstr(out, "\n  special values (NaN, inf): groupings agree on "), "%s", out);
	cr_assert(strstr(out, " rows; outputs agree with the reference\n  ok ("), "%s", out);
	cr_assert_eq(sh(ASSOC " check tests/check/argmax_nan_skipped.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "\n  special values (NaN, inf): groupings disagree [warning]; outputs agree with the "
			      "reference\n    grouping: idx is "), "%s", out);
	cr_assert(strstr(out, "\n    row of x = ["), "%s", out);
	cr_assert(strstr(out, "\n    devices may disagree on rows holding such values: each groups the fold its own "
			      "way\n  ok ("), "%s", out);
	cr_assert_eq(sh(ASSOC " check --json tests/check/argmax_nan_skipped.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "\"special_values\": {\"inputs\": 1, \"rows\": "), "%s", out);
	cr_assert(strstr(out, "\"grouping\": {\"verdict\": \"disagree\", \"detail\": \"idx is "), "%s", out);
	cr_assert(strstr(out, "\"reference\": {\"verdict\": \"agree\"}"), "%s", out);
	cr_assert_eq(sh(ASSOC " check tests/check/nan_max_replaced.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "; outputs disagree with the reference [warning]\n    reference: m is 1000000 but the "
			      "reference gives NaN"), "%s", out);
	/* a reference that overflowed float64 (o_lse's inf * po / inf near
	 * FLT_MAX) holds nothing to account, infinite results included: these
	 * seeds draw such rows */
	for (int seed = 3; seed <= 4; seed++) {
		char cmd[200];
		snprintf(cmd, sizeof cmd, ASSOC " check specs/o_lse.yaml --seed %d", seed);
		cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
		cr_expect_not(strstr(out, "is inf but the reference gives NaN"), "%s: %s", cmd, out);
	}
}

/* Where the prover leaves the laws to the trials alone, run takes emit's
 * 2000, not its few hundred, and refuses what they break. */
/* A merge its trials break is not run; how many trials run takes where
 * the prover cannot decide is check's (run_verdict_tries_harder...). */
Test(cli, run_refuses_a_merge_its_trials_break)
{
	cr_assert_eq(sh(ASSOC " run tests/laws/forgot_rescale.yaml --device interp --rows 2 --len 40", out, sizeof out, 1),
		     1, "%s", out);
	cr_assert(strstr(out, "forgot_rescale.yaml: the merge is not associative") && strstr(out, "refusing to run it"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --rows 2 --len 40", out, sizeof out, 1), 0, "%s", out);
}

Test(cli, check_failing_spec_exit_1)
{
	cr_assert_eq(sh(ASSOC " check tests/laws/forgot_rescale.yaml", out, sizeof out, 0), 1);
	cr_assert(strstr(out, "  associative: disproved (region "), "%s", out);
	cr_assert(strstr(out, "; fails at trial "), "%s", out);
	cr_assert(strstr(out, "    (a+b)+c = {m: "), "%s", out);
	cr_assert(strstr(out, "  special values (NaN, inf): not tried, a law fails on ordinary values\n"), "%s", out);
	cr_assert(strstr(out, "FAILED"), "%s", out);
}

/* A law the prover leaves unknown and a trial breaks: the trial settles
 * it, so the line says disproved, with no warning beside the failure, and
 * an integer state reads in full. */
Test(cli, check_unknown_law_disproved_by_a_trial)
{
	cr_assert_eq(sh(ASSOC " check tests/laws/min_one_short_of_int32_max.yaml", out, sizeof out, 0), 1, "%s", out);
	cr_expect(strstr(out, "  identity: unknown (m differs in region 2147483646 < a.m but no witness was found); "
			      "disproved by trial "), "%s", out);
	cr_expect(strstr(out, ": field m differs: 2147483646 vs 2147483647 ("), "%s", out);
	cr_expect(strstr(out, "    a = {m: 2147483647}   from x = [2147483647]\n"), "%s", out);
	cr_expect_null(strstr(out, "[warning]; disproved"), "%s", out);
}

/* A difference only at states no fold reaches is a warning, not a failure. */
Test(cli, check_unreachable_difference_passes)
{
	cr_assert_eq(sh(ASSOC " check tests/prove/max_subarray.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(!strstr(out, ": disproved") && !strstr(out, "disproved by"), "%s", out);
	cr_assert(strstr(out, "\n  ok ("), "%s", out);
}

Test(cli, several_specs_worst_status)
{
	cr_assert_eq(sh(ASSOC " check specs/sum.yaml tests/laws/wrong_identity.yaml specs/max.yaml", out, sizeof out, 0), 1);
	cr_assert(strstr(out, "carrier sum") && strstr(out, "carrier wrong_identity") && strstr(out, "carrier max"));
	cr_assert_eq(sh(ASSOC " check specs/sum.yaml tests/bad/no_such_file.yaml", out, sizeof out, 0), 2,
		     "an unreadable spec is exit 2 and the others still run");
	cr_assert(strstr(out, "carrier sum"));
}

Test(cli, invalid_spec_exit_2_with_diagnostic)
{
	FILE *f = fopen("build/cli_bad.yaml", "w");
	cr_assert(f);
	fputs("carrier: bad\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift:\n  s: mod(x, 2)\n"
	      "merge:\n  s: a.s + b.s\n", f);
	fclose(f);
	cr_assert_eq(sh(ASSOC " check build/cli_bad.yaml", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "build/cli_bad.yaml:6:6: error: unknown function 'mod'"), "%s", out);
	cr_assert(strstr(out, "    6 |   s: mod(x, 2)\n      |      ^"), "%s", out);
}

Test(cli, json_one_object_per_spec)
{
	cr_assert_eq(sh(ASSOC " check --json specs/sum.yaml tests/laws/false_commutative.yaml", out, sizeof out, 0), 1);
	char *second = strchr(out, '\n');
	cr_assert(second && second[1] == '{', "two lines: %s", out);
	cr_assert(!strncmp(out, "{\"file\": \"specs/sum.yaml\", \"carrier\": \"sum\", \"ok\": true", 54), "%s", out);
	cr_assert(strstr(second, "\"law\": \"commutative\", \"verdict\": \"fails\""), "%s", second);
	cr_assert(strstr(second, "\"counterexample\": {\"mode\": \"float64\""), "%s", second);
	cr_assert(strstr(second, "\"ok\": false"), "%s", second);
	cr_assert(strstr(second, "\"proof\": {\"status\": \"disproved\""), "%s", second);
}

Test(cli, unknown_is_a_warning_and_fails_under_strict)
{
	/* (o, lse) without its certificate: the prover cannot compare logs of sums, the trials pass */
	cr_assert_eq(sh(ASSOC " check --trials 300 tests/prove/o_lse_direct.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "associative: unknown ("), "%s", out);
	cr_assert(strstr(out, "[warning]"), "%s", out);
	cr_assert_eq(sh(ASSOC " check --strict --trials 300 tests/prove/o_lse_direct.yaml", out, sizeof out, 0), 1);
	cr_assert(strstr(out, "FAILED"), "%s", out);
}

Test(cli, proof_trace)
{
	cr_assert_eq(sh(ASSOC " check --proof --trials 100 specs/max.yaml", out, sizeof out, 0), 0);
	cr_assert(strstr(out, "region"), "the trace lists regions: %s", out);
}

Test(cli, seed_changes_nothing_for_lawful_specs)
{
	cr_assert_eq(sh(ASSOC " check --seed 12345 --trials 500 specs/welford.yaml", out, sizeof out, 0), 0);
	cr_assert(strstr(out, "; holds in 500 trials"), "%s", out);
}

Test(cli, defines_override_dims)
{
	cr_assert_eq(sh(ASSOC " check --trials 200 -D dv=8 specs/o_lse.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert_eq(sh(ASSOC " check -D nosuch=3 specs/o_lse.yaml", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "no dim named 'nosuch'"), "%s", out);
	cr_assert_eq(sh(ASSOC " check -D dv=0 specs/o_lse.yaml", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "dim override 'dv' must be positive"), "%s", out);
}

Test(cli, usage_errors)
{
	cr_assert_eq(sh(ASSOC, out, sizeof out, 1), 2);
	cr_assert(strstr(out, "usage: assoc"));
	cr_assert_eq(sh(ASSOC " frobnicate x.yaml", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "unknown command 'frobnicate'"), "%s", out);
	cr_assert_eq(sh(ASSOC " check --seed", out, sizeof out, 1), 2);
	cr_assert_eq(sh(ASSOC " check --bogus specs/sum.yaml", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "unknown option '--bogus'"), "%s", out);
	cr_assert_eq(sh(ASSOC " check", out, sizeof out, 1), 2);
	cr_assert_eq(sh(ASSOC " check --param eps specs/layer_norm.yaml", out, sizeof out, 1), 2);
}

/* check proves the laws at the --param values it draws its trials with,
 * and both proofs and trials take each case of a bool param left free
 * (the trials drew it true alone, where this merge is lawful). */
Test(cli, check_proves_bool_params_case_by_case, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " check tests/prove/bool_param_else_fails.yaml", out, sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "associative: disproved (flag=false: "), "%s", out);
	cr_expect(strstr(out, "trials: with flag=false, the first of 2 cases of the bool param that fails"), "%s", out);
	cr_expect(strstr(out, "); fails at trial"), "the trials fail too: %s", out);
	cr_assert_eq(sh(ASSOC " check tests/prove/mask_param.yaml", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "trials: in each of the 2 cases of the bool param"), "%s", out);
	/* a case the assume rules out has no inputs to try, and is no failure */
	cr_assert_eq(sh(ASSOC " check tests/prove/assume_flag.yaml", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "trials: in the one case of the bool param that the assume admits"), "%s", out);
	/* emit judges the laws as check does: at the --param values, in every case of flag */
	cr_assert_eq(sh(ASSOC " emit tests/prove/bool_param_else_fails.yaml --param flag=true --target llvm -o build/flag_true.ll",
			out, sizeof out, 1), 0, "%s", out);
	cr_assert_eq(sh(ASSOC " emit tests/prove/bool_param_else_fails.yaml --target llvm -o build/flag_any.ll", out,
			sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "trials with flag=false, the first of 2 cases of the bool param that fails"), "%s", out);
	cr_expect_neq(access("build/flag_any.ll", F_OK), 0, "no file written");
	/* explore compares loops at one value of flag: its merge keeps both branches */
	cr_assert_eq(sh(ASSOC " explore tests/prove/loop_bool.yaml", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "s: where(flag, a.s + b.s, max(a.s, b.s))"), "%s", out);
	cr_assert_eq(sh(ASSOC " check tests/prove/bool_param_else_fails.yaml --param flag=true", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "associative: proved (flag=true: "), "%s", out);
}

/* An option given to a command it does not apply to is a usage error
 * naming both, before anything runs (not silently ignored); the options a
 * command takes still work. */
Test(cli, options_of_other_commands_are_usage_errors)
{
	static const char *bad[][2] = {
		{" explore specs/loops/running_mean.yaml --json", "--json is not an option of explore"},
		{" explore specs/loops/running_mean.yaml --trials 5", "--trials is not an option of explore"},
		{" explore specs/loops/running_mean.yaml --device cpu", "--device is not an option of explore"},
		{" check specs/sum.yaml --rows 3", "--rows is not an option of check"},
		{" emit specs/sum.yaml --target cuda --device cpu", "--device is not an option of emit"},
		{" run specs/sum.yaml --device interp --target cuda", "--target is not an option of run"},
		{" tune specs/sum.yaml --json", "--json is not an option of tune"},
		{" bench specs/sum.yaml --output s=build/s.npy", "--output is not an option of bench"},
		{" bench specs/sum.yaml --device cpu --heads 3 --kv-heads 2", "--heads 3 is not a multiple of --kv-heads 2"},
		{" bench specs/sum.yaml --deterministic", "--deterministic is an option of bench --device gpu only"},
		{" emit specs/sum.yaml --target llvm --stats", "--stats is an option of emit --target cuda and ptx only"},
		{" emit specs/sum.yaml --target asm --config rowreduce:nt=64", "--config: unknown --config item 'rowreduce:nt=64'"},
		{" emit specs/sum.yaml --target llvm --arch sm_90", "--arch is an option of emit --target cuda and ptx only"},
		{" emit specs/online_softmax.yaml --target cuda --config rowreduce:nt=128",
		 "configuration 'rowreduce:nt=128' does not fit a rowmap carrier"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC "%s", bad[k][0]);
		cr_expect_eq(sh(cmd, out, sizeof out, 0), 2, "%s", bad[k][0]);
		cr_expect_str_eq(out, "", "%s: nothing on standard output", bad[k][0]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2);
		cr_expect(strstr(out, bad[k][1]), "%s: %s", bad[k][0], out);
	}
	cr_expect_eq(sh(ASSOC " check specs/o_lse.yaml --trials 500 --json --seed 3 -D dv=8", out, sizeof out, 0), 0, "%s",
		     out);
	cr_expect_eq(sh(ASSOC " emit specs/sum.yaml --target cuda --trials 500 --config rowreduce:nt=64 -o /dev/null",
			out, sizeof out, 1),
		     0, "%s", out);
	struct stat st;
	cr_expect(!stat("/dev/null", &st) && S_ISCHR(st.st_mode), "/dev/null is still the device");
}

/* run --deterministic is taken on every device; off the gpu (and
 * without --mpi) nothing is tuned, so it changes nothing: the same bits. */
Test(cli, run_deterministic_off_the_gpu_changes_nothing, .timeout = 120)
{
	static const char *const devs[] = {"cpu", "interp", "emu"};
	for (size_t d = 0; d < sizeof devs / sizeof *devs; d++) {
		char cmd[512];
		for (int det = 0; det < 2; det++) {
			snprintf(cmd, sizeof cmd, ASSOC " run specs/online_softmax.yaml --device %s --rows 3 --len 300%s "
				 "--output y=build/det%d.npy", devs[d], det ? " --deterministic" : "", det);
			cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
		}
		cr_expect_eq(sh("cmp build/det0.npy build/det1.npy", out, sizeof out, 1), 0, "%s: %s", devs[d], out);
	}
	remove("build/det0.npy");
	remove("build/det1.npy");
}

/* Outputs go through a device or a pipe in place (renaming onto one, as
 * root, replaced /dev/null with a file), through a symbolic link to its
 * target (the link stays), and an interrupted emit leaves no file. */
Test(cli, outputs_write_through_pipes_and_links, .timeout = 120)
{
	unlink("build/out.fifo");
	cr_assert_eq(mkfifo("build/out.fifo", 0600), 0);
	cr_assert_eq(sh("(cat build/out.fifo > build/out_fifo.cu &) ; " ASSOC
			" emit specs/sum.yaml --target cuda --trials 200 -o build/out.fifo; sleep 0.2",
			out, sizeof out, 1),
		     0, "%s", out);
	struct stat st;
	cr_expect(!lstat("build/out.fifo", &st) && S_ISFIFO(st.st_mode), "the pipe is still a pipe");
	cr_expect(!stat("build/out_fifo.cu", &st) && st.st_size > 1000, "the code went through the pipe");
	unlink("build/out.fifo");

	unlink("build/out_link.ll");
	FILE *f = fopen("build/out_target.ll", "w");
	cr_assert(f);
	fclose(f);
	cr_assert_eq(symlink("out_target.ll", "build/out_link.ll"), 0);
	cr_assert_eq(sh(ASSOC " emit specs/sum.yaml --target llvm --trials 200 -o build/out_link.ll", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(!lstat("build/out_link.ll", &st) && S_ISLNK(st.st_mode), "the link is still a link");
	cr_expect(!stat("build/out_target.ll", &st) && st.st_size > 1000, "its target holds the code");
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --output s=build/out_link.ll", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(!lstat("build/out_link.ll", &st) && S_ISLNK(st.st_mode), "run: the link is still a link");
	char magic[8] = "";
	f = fopen("build/out_target.ll", "rb");
	cr_assert(f);
	cr_expect(fread(magic, 1, 6, f) == 6 && !memcmp(magic, "\x93NUMPY", 6), "run: the target holds the array");
	fclose(f);

	unlink("build/out_int.cu");
	sh("timeout -s INT 2 " ASSOC " emit specs/attention.yaml -D d=4096 -D dv=4096 --target cuda -o build/out_int.cu", out,
	   sizeof out, 1);
	glob_t g;
	cr_expect_eq(glob("build/.out_int.cu.*.tmp", 0, NULL, &g), GLOB_NOMATCH, "no temporary file left");
	globfree(&g);
	cr_expect(stat("build/out_int.cu", &st), "and no output");
}

/* A spec named in the working directory that cannot be opened (a loop of
 * links) says why, not that it was looked for in the installed specs */
Test(cli, unopenable_spec_says_why)
{
	char dir[] = "/tmp/assoc-loopXXXXXX", a[64], b[64], cmd[PATH_MAX + 128];
	test_tmpdir(dir);
	snprintf(a, sizeof a, "%s/one.yaml", dir);
	snprintf(b, sizeof b, "%s/two.yaml", dir);
	cr_assert_eq(symlink("two.yaml", a), 0);
	cr_assert_eq(symlink("one.yaml", b), 0);
	char here[PATH_MAX];
	cr_assert(getcwd(here, sizeof here));
	snprintf(cmd, sizeof cmd, "cd %s && %s/" ASSOC " check one.yaml", dir, here);
	int rc = sh(cmd, out, sizeof out, 1);
	unlink(a), unlink(b), rmdir(dir);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "one.yaml: error: cannot open: Too many levels of symbolic links") &&
			  !strstr(out, "not in the working directory"),
		  "%s", out);
}

Test(cli, help_and_version)
{
	cr_assert_eq(sh(ASSOC " --help", out, sizeof out, 0), 0);
	cr_assert(strstr(out, "check SPEC..."));
	cr_assert_eq(sh(ASSOC " --version", out, sizeof out, 0), 0);
	cr_assert(!strncmp(out, "assoc ", 6));
}

/* Each command's --help (and assoc help CMD) prints that command's usage
 * and the options it takes, no others, and exits 0. */
Test(cli, each_command_has_its_help)
{
	static const char *const cmds[] = {"check", "run", "emit", "bench", "tune", "explore"};
	char cmd[256], again[sizeof out];
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		snprintf(cmd, sizeof cmd, ASSOC " %s --help", cmds[i]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
		snprintf(cmd, sizeof cmd, "usage: assoc %s [options] SPEC", cmds[i]);
		cr_expect(!strncmp(out, cmd, strlen(cmd)), "%s", out);
		cr_expect(strstr(out, "--seed N"), "options for every command: %s", out);
		snprintf(cmd, sizeof cmd, ASSOC " help %s", cmds[i]);
		cr_assert_eq(sh(cmd, again, sizeof again, 1), 0, "%s: %s", cmd, again);
		cr_expect_str_eq(again, out, "assoc help %s prints the same", cmds[i]);
	}
	cr_assert_eq(sh(ASSOC " run --help", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "--output NAME=FILE.npy") && strstr(out, "--device D") && strstr(out, "compare every"),
		  "%s", out);
	cr_expect(!strstr(out, "--proof") && !strstr(out, "--target T") && !strstr(out, "check SPEC"), "run's alone: %s",
		  out);
	cr_assert_eq(sh(ASSOC " check --help", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "--proof") && !strstr(out, "--rows"), "%s", out);
	/* an option line shows for the commands that take it: explore writes -o, not --target */
	cr_assert_eq(sh(ASSOC " explore --help", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "-o FILE") && !strstr(out, "--target") && !strstr(out, "--header"), "%s", out);
	cr_assert_eq(sh(ASSOC " emit --help", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "--target T") && strstr(out, "--stats") && strstr(out, "--explain"), "%s", out);
	cr_assert_eq(sh(ASSOC " help", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "usage: assoc <command>"), "%s", out);
	cr_assert_eq(sh(ASSOC " help nope", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "unknown command 'nope'"), "%s", out);
}

Test(cli, run_interp_and_npy)
{
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --rows 3 --len 33 --output var=build/var.npy "
			"--output mean=build/mean.npy", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "carrier welford on interp, 3 rows x 33"), "%s", out);
	cr_assert(strstr(out, "  var: max abs error"), "%s", out);
	cr_assert(strstr(out, "\n  ok\n"), "%s", out);
	/* feed an output back as an input of another spec: the row sums of x are sums */
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --input x=build/var.npy", out, sizeof out, 1), 2,
		     "a 1-D array cannot be an element input of rows x positions: %s", out);
	cr_assert(strstr(out, "build/var.npy: shape (3,) does not fit input 'x'"), "the file's shape is named: %s", out);
}

/* bench builds the naive loop in TMPDIR, and interrupted while it does
 * leaves nothing there: the compiler here notes its arguments and sends
 * assoc SIGTERM. */
Test(cli, bench_interrupted_at_the_naive_loop_leaves_nothing, .timeout = 120)
{
	char dir[] = "/tmp/assoc-benchint-XXXXXX", cmd[1024], want[128];
	test_tmpdir(dir);
	snprintf(cmd, sizeof cmd, "mkdir %s/t && TMPDIR=%s/t CC='f() { echo \"$*\" >%s/args; kill -TERM $PPID; }; f' "
		 ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 4 --len 1000", dir, dir, dir);
	cr_expect_neq(sh(cmd, out, sizeof out, 1), 0, "ended by its signal: %s", out);
	snprintf(cmd, sizeof cmd, "cat %s/args", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "the compiler ran: %s", out);
	snprintf(want, sizeof want, "-o %s/t/assoc-naive-", dir);
	cr_expect(strstr(out, want), "built in TMPDIR: %s", out);
	snprintf(cmd, sizeof cmd, "ls -A %s/t", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0);
	cr_expect_str_empty(out, "left in TMPDIR: %s", out);
}

/* bench says how much arithmetic a position costs per byte moved, and
 * calls a carrier compute-bound when the copy's bandwidth leaves too
 * little time for it (a sum: one add for four bytes; ten nested exps a
 * position: 211 operations, at 20 an exp, for four bytes), counting what
 * the kernel's tiles do a position rather than a merge, and a vector's
 * operations a component each. */
Test(cli, bench_says_operations_per_byte, .timeout = 120)
{
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 4 --len 1000 --json", out, sizeof out, 0), 0,
		     "%s", out);
	cr_assert(strstr(out, "\"ops_per_position\": 1, \"ops_per_byte\": 0.2"), "%s", out);
	cr_assert(strstr(out, "\"ops_per_byte_at_copy\": ") && strstr(out, "\"compute_bound\": "), "%s", out);
	FILE *f = fopen("build/bench_heavy.yaml", "w");
	cr_assert(f);
	fputs("carrier: heavy\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
	      "lift: {s: exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(x * 0.001) * 0.001) * 0.001) * 0.001) * 0.001) * 0.001) * 0.001) * 0.001) * 0.001) * 0.001)}\n"
	      "merge: {s: a.s + b.s}\nlaws: [commutative]\n",
	      f);
	fclose(f);
	cr_assert_eq(sh(ASSOC " bench build/bench_heavy.yaml --device cpu --threads 1 --rows 4 --len 1000", out, sizeof out, 0), 0,
		     "%s", out);
	cr_assert(strstr(out, "arithmetic ") && strstr(out, "ops/byte (211 a position)"), "%s", out);
	cr_assert(strstr(out, ": compute-bound"), "%s", out);
	/* as the kernel folds: logsumexp's max-rescale tiles one exp a
	 * position (20), a multiply-add and a max, not the merge's two exps
	 * (50); Welford's transported tiles the certificate's coordinates and
	 * three adds (9), not the merge's division and products (25) */
	cr_assert_eq(sh(ASSOC " bench specs/logsumexp.yaml --device cpu --threads 1 --rows 4 --len 4096 --json", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"max_rescale\": 1") && strstr(out, "\"ops_per_position\": 22,"), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/welford.yaml --device cpu --threads 1 --rows 4 --len 4096 --json", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"transported\": 1") && strstr(out, "\"ops_per_position\": 9,"), "%s", out);
	/* a vector's operations a component each: 8 bins' two compares, an
	 * and and a select in lift, 8 adds in merge, and the scalar sum's
	 * add (it was 5, as if each vector were one value) */
	cr_assert_eq(sh(ASSOC " bench tests/rows/row_bins.yaml --device cpu --threads 1 --rows 4 --len 1000 --json", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"ops_per_position\": 41,"), "%s", out);
	/* map outputs the row fixes, each twice in the next (a DAG of 40
	 * levels): hoisted, counted nothing, and each node looked at once
	 * (walked once a path, the count took 2^40 steps) */
	f = fopen("build/bench_shared_map.yaml", "w");
	cr_assert(f);
	fputs("carrier: shared_map\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
	      "merge: {s: a.s + b.s}\nfinalize: {o: s}\nlaws: [commutative]\nmap:\n  u0: s * 1.0001\n",
	      f);
	for (int i = 1; i < 40; i++)
		fprintf(f, "  u%d: u%d * 0.5 + u%d * 0.25\n", i, i - 1, i - 1);
	fputs("  y: x - u39\n", f);
	fclose(f);
	cr_assert_eq(sh(ASSOC " bench build/bench_shared_map.yaml --device cpu --threads 1 --rows 4 --len 1024 --json", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"ops_per_position\": 2,"), "%s", out);
}

/* spec text to build/NAME.yaml, then bench's output for it (json or text) */
static void bench_text(const char *name, const char *spec, int json)
{
	char path[100], cmd[300];
	snprintf(path, sizeof path, "build/%s.yaml", name);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs(spec, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, ASSOC " bench %s --device cpu --threads 1 --rows 2 --len 1000%s", path,
		 json ? " --json" : "");
	cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
}

/* bench's count charges what the kernel does: a scan in vectors its
 * log2(lanes) steps and the merge onto the state before (5 merges a
 * position in 16 lanes), and says neither accumulators nor an order of
 * positions for it; an operation on 64-bit values twice (a vector of
 * them is two registers); a float32 tanh 30 (vector code), a float64 one
 * a libm call a lane, 40 operations a lane, named as such. */
Test(cli, bench_counts_scans_wide_values_and_libm_calls, .timeout = 120)
{
	bench_text("bench_scan", "carrier: csum\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\ntemplate: scan\n", 1);
	const char *sl = strstr(out, "\"scan_lanes\": ");
	cr_assert(sl, "%s", out);
	int lanes = atoi(sl + 14), steps = 1;
	for (int w = lanes; w > 1; w /= 2)
		steps++;
	char want[64];
	snprintf(want, sizeof want, "\"ops_per_position\": %d,", steps);
	cr_expect(lanes > 1 && strstr(out, want), "%d lanes, want %s: %s", lanes, want, out);
	cr_expect(strstr(out, "\"ordered\": 0, \"order\": null"), "%s", out);
	bench_text("bench_scan", "carrier: csum\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\ntemplate: scan\n", 0);
	snprintf(want, sizeof want, ", a scan in vectors of %d positions, %d merges a position, ", lanes, steps);
	cr_expect(strstr(out, want), "%s", out);
	cr_expect(!strstr(out, "accumulators") && !strstr(out, "any order") && !strstr(out, "ordered"), "%s", out);
	/* a merge that divides takes tiles of blocks: 3 merges a position */
	bench_text("bench_scan_tiles", "carrier: cmean\nelement: {x: f32}\nstate: {n: f32, mean: f32}\n"
		   "identity: {n: 0, mean: 0}\nlift: {n: 1, mean: x}\nmerge:\n  n: a.n + b.n\n"
		   "  mean: where(n == 0, 0, a.mean + (b.mean - a.mean) * (b.n / n))\ntemplate: scan\n", 0);
	if (lanes == 16)
		cr_expect(strstr(out, ", a scan in tiles of 16 blocks of 16 positions, 3 merges a position, "), "%s", out);
	bench_text("bench_i64", "carrier: s64\nelement: {x: i64}\nstate: {s: i64}\nidentity: {s: 0}\nlift: {s: x}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\n", 1);
	cr_expect(strstr(out, "\"ops_per_position\": 2,"), "%s", out);
	bench_text("bench_tanh", "carrier: t32\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: tanh(x)}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\n", 1);
	cr_expect(strstr(out, "\"ops_per_position\": 31,") && strstr(out, "\"scalar_calls\": null"), "%s", out);
	bench_text("bench_tanh64", "carrier: t64\nelement: {x: f64}\nstate: {s: f64}\nidentity: {s: 0}\nlift: {s: tanh(x)}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\n", 1);
	const char *lj = strstr(out, "\"lanes\": ");
	cr_assert(lj, "%s", out);
	lanes = atoi(lj + 9);
	snprintf(want, sizeof want, "\"ops_per_position\": %d,", 40 * lanes + 2);
	cr_expect(strstr(out, want) && strstr(out, "\"scalar_calls\": \"tanh\"") && strstr(out, "\"compute_bound\": true"),
		  "want %s: %s", want, out);
	bench_text("bench_tanh64", "carrier: t64\nelement: {x: f64}\nstate: {s: f64}\nidentity: {s: 0}\nlift: {s: tanh(x)}\n"
		   "merge: {s: a.s + b.s}\nlaws: [commutative]\n", 0);
	cr_expect(strstr(out, "  scalar: tanh of f64 values is a libm call a lane (counted 40 operations a lane)\n") &&
			  strstr(out, ": compute-bound"),
		  "%s", out);
}

/* Rows past the threads' L2 (64 x 65536 floats, one thread): bench times
 * the kernel over the first rows in cache too, and that measured speed
 * against the copy's decides "compute-bound"; rows that fit are not timed
 * twice (null). */
Test(cli, bench_measures_the_kernel_in_cache, .timeout = 120)
{
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 64 --len 65536 --json", out, sizeof out, 0),
		     0, "%s", out);
	const char *g = strstr(out, "\"gelems_in_cache\": ");
	cr_assert(g && atof(g + 20) > 0, "%s", out);
	const char *r = strstr(out, "\"ratio_to_copy\": "), *cb = strstr(out, "\"compute_bound\": ");
	cr_assert(r && cb, "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 64 --len 65536", out, sizeof out, 0), 0,
		     "%s", out);
	cr_expect(strstr(out, "\n  in cache ") && strstr(out, " G elements/s (1 of its rows, 0.26 MB, again and again): "),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 4 --len 1000 --json", out, sizeof out, 0), 0,
		     "%s", out);
	cr_expect(strstr(out, "\"gelems_in_cache\": null"), "%s", out);
}

/* bench says why a reduce folds in one lane where it does (a sum of 32
 * components beside a scalar one: 33 state components, and beside a
 * top-16 list the same 33, the list kept apart from the lanes), and says
 * nothing where it runs vector lanes (Welford; softmax beside a top-16
 * list, its 34 components but 2 in the lanes). */
Test(cli, bench_says_why_one_lane, .timeout = 120)
{
	static const char *wide[] = {
		"carrier: sum_wide\nelement: {x: f32}\nstate: {s: f32, h: 'f32[32]'}\nidentity: {s: 0, h: 0}\n"
		"lift: {s: x, h: x}\nmerge: {s: a.s + b.s, h: a.h + b.h}\nlaws: [commutative]\n",
		"carrier: sum_wide_top16\nelement: {x: f32}\n"
		"state: {s: f32, h: 'f32[32]', top: 'f32[16]', at: 'i32[16]'}\n"
		"identity: {s: 0, h: 0, top: -inf, at: -1}\n"
		"lift: {s: x, h: x, top: 'topk(x, j, 16)', at: 'topk_idx(x, j, 16)'}\n"
		"merge: {s: a.s + b.s, h: a.h + b.h, top: 'topk(a.top, a.at, b.top, b.at)', at: 'topk_idx(a.top, a.at, b.top, b.at)'}\n"
		"laws: [commutative]\n",
	};
	for (size_t t = 0; t < sizeof wide / sizeof *wide; t++) {
		FILE *f = fopen("build/bench_wide.yaml", "w");
		cr_assert(f);
		fputs(wide[t], f);
		fclose(f);
		cr_assert_eq(sh(ASSOC " bench build/bench_wide.yaml --device cpu --threads 1 --rows 2 --len 1000 --json", out, sizeof out, 0),
			     0, "%s", out);
		cr_assert(strstr(out, "\"lanes\": 1,") && strstr(out, "\"one_lane\": \"a state of 33 components, over the 24 that fold"),
			  "%s", out);
		cr_assert_eq(sh(ASSOC " bench build/bench_wide.yaml --device cpu --threads 1 --rows 2 --len 1000", out, sizeof out, 0), 0,
			     "%s", out);
		cr_assert(strstr(out, "  one lane: the reduce folds in one lane, for a state of 33 components"), "%s", out);
	}
	static const char *lanes[] = {"specs/welford.yaml", "bench/carriers/softmax_top16.yaml"};
	for (size_t t = 0; t < sizeof lanes / sizeof *lanes; t++) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, ASSOC " bench %s --device cpu --threads 1 --rows 2 --len 1000 --json", lanes[t]);
		cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
		cr_assert(strstr(out, "\"one_lane\": null") && !strstr(out, "\"lanes\": 1,"), "%s: %s", lanes[t], out);
		snprintf(cmd, sizeof cmd, ASSOC " bench %s --device cpu --threads 1 --rows 2 --len 1000", lanes[t]);
		cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
		cr_assert(!strstr(out, "one lane"), "%s: %s", lanes[t], out);
	}
}

/* check says whether the devices may reorder a carrier that does not
 * claim commutativity (argmin_first: proved; argmax_first: disproved,
 * with the prover's region), in text and JSON, and says nothing where
 * the claim is made (Welford). */
Test(cli, check_says_whether_positions_may_be_reordered, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " check bench/carriers/argmin_first.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "  order: not claimed; the CPU's lanes and the GPU's row templates fold positions in any order: a+b = b+a "
			       "proved ("), "%s", out);
	cr_assert_eq(sh(ASSOC " check bench/carriers/argmax_first.yaml --json", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "\"any_order\": false, \"order\": \"a+b = b+a is disproved (region a.best = b.best"), "%s",
		  out);
	cr_assert_eq(sh(ASSOC " check bench/carriers/argmax_first.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "  order: not claimed; the CPU's lanes and the GPU's row templates keep the positions' order: a+b = b+a "
			       "is disproved"), "%s", out);
	cr_assert_eq(sh(ASSOC " check specs/welford.yaml", out, sizeof out, 0), 0, "%s", out);
	cr_assert(!strstr(out, "order:"), "%s", out);
}

/* bench says in which order the lanes fold and why: argmax_first keeps
 * the earlier of equal values (ordered lanes, with the prover's
 * counterexample), argmin_first's ties go by position (any order,
 * proved), welford claims it. */
Test(cli, bench_says_why_the_lanes_are_ordered, .timeout = 120)
{
	static const struct {
		const char *spec, *json, *text;
	} cases[] = {
		{"bench/carriers/argmax_first.yaml", "\"order\": \"a+b = b+a is disproved (region a.best = b.best",
		 "  ordered: 16 lanes each fold a run of positions, merged in order: the merge is not known to commute: "
		 "a+b = b+a is disproved"},
		{"bench/carriers/argmin_first.yaml", "\"ordered\": 0, \"order\": \"a+b = b+a proved (",
		 "  any order: the merge commutes, a+b = b+a proved ("},
		{"specs/welford.yaml", "\"ordered\": 0, \"order\": \"claimed (laws: [commutative])\"",
		 "  any order: the merge commutes, claimed"},
	};
	for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, ASSOC " bench %s --device cpu --threads 1 --rows 2 --len 1000 --json", cases[t].spec);
		cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
		cr_assert(strstr(out, cases[t].json), "%s: %s", cases[t].spec, out);
		snprintf(cmd, sizeof cmd, ASSOC " bench %s --device cpu --threads 1 --rows 2 --len 1000", cases[t].spec);
		cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
		cr_assert(strstr(out, cases[t].text), "%s: %s", cases[t].spec, out);
	}
}

/* bench measures real data where --input gives it (here rows half masked
 * with -inf): the shape comes from the file; a file that is not .npy, or an
 * input the spec lacks, is a usage error with nothing measured. */
Test(cli, bench_reads_inputs_from_npy, .timeout = 120)
{
	enum { R = 6, L = 70 };
	static float x[R * L];
	for (int i = 0; i < R * L; i++)
		x[i] = i % L > L / 2 ? -INFINITY : (float)(i % 13) - 6;
	Npy a = {.ndim = 2, .shape = {R, L}, .count = R * L, .itemsize = 4, .data = x};
	strcpy(a.descr, "<f4");
	char msg[512];
	cr_assert_eq(npy_write("build/bench_x.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " bench specs/online_softmax.yaml --device cpu --threads 1 --input x=build/bench_x.npy --json",
			out, sizeof out, 0), 0, "%s", out);
	cr_assert(strstr(out, "\"rows\": 6, \"len\": 70,"), "%s", out);
	cr_assert(strstr(out, "\"gbps\": "), "%s", out);
	FILE *f = fopen("build/bench_bad.npy", "w");
	cr_assert(f);
	fputs("not an array", f);
	fclose(f);
	cr_assert_eq(sh(ASSOC " bench specs/online_softmax.yaml --device cpu --input x=build/bench_bad.npy", out, sizeof out, 1),
		     2);
	cr_assert(strstr(out, "build/bench_bad.npy: not a .npy file") && !strstr(out, "GB/s"), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/online_softmax.yaml --device cpu --input q=build/bench_x.npy", out, sizeof out, 1),
		     2);
	cr_assert(strstr(out, "the spec has no input named 'q'"), "%s", out);
}

/* bench finds its floor by the carrier's name and times it only when it
 * computes what the spec does: the bundled attention meets its causal
 * floor; the same carrier without its mask is not compared with it; the
 * MoE router meets its own. */
Test(cli, bench_times_only_a_floor_that_meets_the_reference, .timeout = 120)
{
	const char *cmd = ASSOC " bench %s --device cpu --threads 1 --rows 48 --len 200 -D d=32 -D dv=32";
	char line[256];
	snprintf(line, sizeof line, cmd, "specs/attention.yaml");
	cr_assert_eq(sh(line, out, sizeof out, 0), 0, "%s", out);
	cr_expect(strstr(out, "kernel/naive "), "the causal floor is timed: %s", out);
	cr_expect(strstr(out, " GFLOP/s (") && strstr(out, "attention is compute-bound: no kernel/copy ratio") &&
			  !strstr(out, "kernel/copy 0"),
		  "attention: its FLOP/s, no copy ratio: %s", out);
	FILE *in = fopen("specs/attention.yaml", "r"), *f = fopen("build/attention_unmasked.yaml", "w");
	cr_assert(in && f);
	char text[256];
	while (fgets(text, sizeof text, in))
		if (strncmp(text, "mask:", 5))
			fputs(text, f);
	fclose(in);
	fclose(f);
	snprintf(line, sizeof line, cmd, "build/attention_unmasked.yaml");
	cr_assert_eq(sh(line, out, sizeof out, 0), 0, "%s", out);
	cr_expect(strstr(out, "naive  unavailable: naive_attention does not compute this spec: on 24 rows x 200, its out is"),
		  "%s", out);
	cr_expect(!strstr(out, "kernel/naive "), "%s", out);
	/* the MoE router's floor (softmax, top 8 by insertion, renormalized)
	 * meets the reference and is timed */
	cr_assert_eq(sh(ASSOC " bench specs/moe_topk_routing.yaml --device cpu --threads 1 --rows 64 --len 256", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "kernel/naive ") && !strstr(out, "unavailable"), "%s", out);
}

/* With --heads, arrays carry a leading head axis (key/value heads for the
 * key and value columns): the drawn inputs written out and read back with
 * another seed give the same result, and a wrong head count is refused. */
Test(cli, run_heads_through_npy, .timeout = 120)
{
	const char *run = ASSOC " run specs/attention.yaml -D d=32 -D dv=32 --device interp --heads 2 --kv-heads 1 --param scale=0.25";
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s --rows 5 --len 9 --output q=build/hq.npy --output k=build/hk.npy "
		 "--output v=build/hv.npy --output lse=build/hlse1.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	Npy q, k, l1, l2;
	char msg[512];
	cr_assert_eq(npy_read("build/hq.npy", &q, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read("build/hk.npy", &k, msg, sizeof msg), 0, "%s", msg);
	cr_expect(q.ndim == 3 && q.shape[0] == 2 && q.shape[1] == 5 && q.shape[2] == 32, "q %d dims", q.ndim);
	cr_expect(k.ndim == 3 && k.shape[0] == 1 && k.shape[1] == 9 && k.shape[2] == 32, "k %d dims", k.ndim);
	snprintf(cmd, sizeof cmd, "%s --seed 77 --input q=build/hq.npy --input k=build/hk.npy --input v=build/hv.npy "
		 "--output lse=build/hlse2.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "5 rows x 9"), "%s", out);
	cr_assert_eq(npy_read("build/hlse1.npy", &l1, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read("build/hlse2.npy", &l2, msg, sizeof msg), 0, "%s", msg);
	cr_assert(l1.ndim == 2 && l1.shape[0] == 2 && l1.shape[1] == 5 && l2.count == l1.count);
	for (size_t i = 0; i < l1.count; i++)
		cr_expect_eq(npy_get(&l1, i), npy_get(&l2, i), "lse %zu", i);
	snprintf(cmd, sizeof cmd, ASSOC " run specs/attention.yaml -D d=32 -D dv=32 --device interp --heads 4 --kv-heads 1 "
				     "--param scale=0.25 --input q=build/hq.npy");
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
	/* q is a row input: its rows and heads are named, not the keys it never has */
	cr_expect(strstr(out, "shape (2, 5, 32) does not fit input 'q' of 5 rows, per head: expected (4, 5, 32)"), "%s",
		  out);
	npy_free(&q), npy_free(&k), npy_free(&l1), npy_free(&l2);
}

/* Every command that draws a run checks the heads the same way, and the
 * CPU bench reads --config as the CPU device does (items in any order). */
Test(cli, heads_and_cpu_config_everywhere)
{
	static const char *const cmds[] = {" run", " tune", " bench --device gpu"};
	for (int k = 0; k < 3; k++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC "%s specs/attention.yaml --rows 4 --len 8 --heads 3 --kv-heads 2", cmds[k]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", cmd, out);
		cr_expect(strstr(out, "--heads 3 is not a multiple of --kv-heads 2"), "%s: %s", cmd, out);
	}
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --rows 4 --len 64 --config tile=2,lanes=8 --json", out,
			sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "\"lanes\": 8") && strstr(out, "\"tile\": 2"), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --rows 4 --len 64 --config bogus=2", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "unknown --config item 'bogus=2'"), "%s", out);
}

Test(cli, run_usage_errors)
{
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device nosuch", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "unknown device 'nosuch'"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml specs/max.yaml", out, sizeof out, 1), 2);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --input y=build/var.npy", out, sizeof out, 1), 2);
	cr_assert(strstr(out, "no input named 'y'"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --output nope=build/x.npy --device interp", out, sizeof out, 1), 2);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --rows -1", out, sizeof out, 1), 2);
}

/* build/assoc opens its CPU backend (build/assoc-llvm.so) only when a
 * command needs it: it runs on the CPU through it, says clearly when the
 * file is missing or is something else, and checks specs without it. */
Test(cli, cpu_backend_is_a_plugin_of_the_command_line)
{
	FILE *f = fopen("build/assoc-llvm.so", "rb");
	if (!f)
		cr_skip_test("build/assoc-llvm.so not built (NO_LLVM=1)");
	fclose(f);
	cr_assert_eq(sh("build/assoc run specs/online_softmax.yaml --device cpu --rows 3 --len 1000", out, sizeof out, 1),
		     0, "%s", out);
	cr_assert(strstr(out, "against the float64 reference"), "%s", out);
	/* a file that is missing, one that is no plugin, a plugin of another build */
	static const char *refused[][3] = {
		{"build/no-such-plugin.so", "run specs/sum.yaml --device cpu --rows 2 --len 9",
		 "the CPU backend could not be loaded: build/no-such-plugin.so"},
		{"build/libfakenvrtc.so", "emit specs/sum.yaml --target llvm",
		 "build/libfakenvrtc.so is not assoc's CPU backend"},
		{"build/libfakellvm.so", "run specs/sum.yaml --device cpu --rows 2 --len 9",
		 "build/libfakellvm.so is the CPU backend of another build of assoc"},
	};
	for (int k = 0; k < 3; k++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "ASSOC_LLVM_PLUGIN=%s build/assoc %s", refused[k][0], refused[k][1]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", cmd, out);
		cr_assert(strstr(out, refused[k][2]), "%s: %s", cmd, out);
	}
	cr_assert_eq(sh("ASSOC_LLVM_PLUGIN=build/no-such-plugin.so build/assoc check specs/sum.yaml", out, sizeof out, 1),
		     0, "%s", out);
	/* the command line itself does not load LLVM */
	cr_assert_eq(sh("LD_DEBUG=files build/assoc check specs/sum.yaml", out, sizeof out, 1), 0);
	cr_assert(strstr(out, "libyaml") && !strstr(out, "LLVM"), "%s", out);
}

/* A device, compiler or backend that cannot be used, or a configuration
 * the device cannot run, is a command that could not do what was asked:
 * exit 2 with the reason, never the 1 of a check that failed. */
Test(cli, a_device_that_cannot_be_used_exits_2, .timeout = 120)
{
	char tmpl[] = "build/unusable-XXXXXX", cmd[1024];
	const char *dir = test_tmpdir(tmpl);
	test_xdg_cache(dir); /* nothing built before: the emulator compiles */
	static const char *cases[][2] = {
		{"ASSOC_LIBCUDA=build/no-such-libcuda.so " ASSOC " run specs/sum.yaml --device gpu --rows 2 --len 9",
		 "assoc: device gpu is not usable here: "},
		{"ASSOC_LIBCUDA=build/no-such-libcuda.so " ASSOC " bench specs/sum.yaml --device gpu --rows 2 --len 9",
		 "assoc: bench --device gpu: "},
		{"ASSOC_LIBCUDA=build/no-such-libcuda.so " ASSOC " tune specs/sum.yaml --rows 2 --len 64",
		 "assoc: tune needs a GPU: "},
		{"ASSOC_CXX=build/no-such-c++ " ASSOC " run specs/max.yaml --device emu --rows 3 --len 12", "emu"},
		{"TMPDIR=build/no-such-folder " ASSOC " run specs/max.yaml --device emu --rows 3 --len 11",
		 "emulator: cannot make a folder to build in (build/no-such-folder/assoc-emu-"},
		{"ASSOC_LLVM_PLUGIN=build/no-such-plugin.so build/assoc bench specs/max.yaml --device cpu --rows 3 --len 12",
		 "the CPU backend could not be loaded: build/no-such-plugin.so"},
		{"ASSOC_CPU=bogus " ASSOC " run specs/max.yaml --device cpu --rows 3 --len 12",
		 "assoc: cpu: ASSOC_CPU=bogus: assoc knows no CPU of that name"},
		{"ASSOC_CPU=bogus " ASSOC " bench specs/max.yaml --device cpu --rows 3 --len 12",
		 "ASSOC_CPU=bogus: assoc knows no CPU of that name"},
		{"ASSOC_CPU=bogus " ASSOC " emit specs/max.yaml --target asm -o build/unusable.s",
		 "ASSOC_CPU=bogus: assoc knows no CPU of that name"},
		{"ASSOC_NVRTC=build/no-such-libnvrtc.so " ASSOC " emit specs/max.yaml --target ptx -o build/unusable.ptx",
		 "build/no-such-libnvrtc.so"},
		{ASSOC " run specs/online_softmax.yaml --device emu --rows 2 --len 300 --config scan:nt=128",
		 "configuration 'scan:nt=128' does not fit a rowmap carrier"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(cmd, sizeof cmd, "%s", cases[i][0]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", cmd, out);
		cr_expect(strstr(out, cases[i][1]), "%s: \"%s\" in %s", cmd, cases[i][1], out);
	}
}

/* check on lets and merge temporaries that reuse the one before: the laws
 * that hold end ok (proved, or unknown past the prover's budget and held
 * by the trials), and a buggy merge past the budget still fails its trials. */
Test(cli, check_shared_subterms_in_time, .timeout = 60)
{
	static const char *ok[] = {"tests/prove/dag_lets.yaml", "tests/prove/dag_merge.yaml", "tests/prove/dag_cancel.yaml"};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " check %s", ok[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	}
	cr_expect_eq(sh(ASSOC " check tests/prove/dag_cancel_buggy.yaml", out, sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "associative: unknown (budget: a normal form of degree past") &&
			  strstr(out, "); disproved by trial"),
		  "%s", out);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* spec runs and passes its self-check on the CPU, the emulator and the interpreter. */
static void ok_on_every_device(const char *spec, const char *args)
{
	static const char *devs[] = {"cpu", "emu", "interp"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, ASSOC " run %s --device %s %s", spec, devs[i], args);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", devs[i], out);
		cr_expect(strstr(out, "\n  ok\n"), "%s: %s", devs[i], out);
	}
}

/* Every section of tests/check/deepest.yaml is exactly SPEC_MAX_TREE_DEPTH
 * levels deep (one more fails to load): every pass recurses that deep (the
 * prover twice as deep, composing the merge) within the stack, under
 * AddressSanitizer's larger frames: the verdict on the command line, then
 * the CUDA C the emulator builds, the LLVM module the cpu compiles and
 * the interpreter, each run against the reference (a verdict each took
 * the command line seconds under the sanitizers). */
Test(cli, deepest_spec_checks_and_runs_on_every_device, .timeout = 180)
{
	const char *spec = "tests/check/deepest.yaml";
	char cmd[512], msg[2048];
	snprintf(cmd, sizeof cmd, ASSOC " check %s --trials 300", spec);
	cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	Carrier *c = load_ok(spec);
	static const char *devs[] = {"cpu", "emu", "interp"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		const Device *dv = run_device_find(devs[i]);
		cr_assert(dv && dv->available(msg, sizeof msg), "%s: %s", devs[i], msg);
		RunData *d = rundata_new(c, 3, 77);
		cr_assert_eq(rundata_draw(d, 1, (Define[]){{"p", "1"}}, 1, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(dv->run(d, &(RunOpts){.split = 1}, msg, sizeof msg), 0, "%s: %s", devs[i], msg);
		RunCheck rc;
		runcheck_run(d, &rc);
		cr_expect(rc.ok, "%s against the reference", devs[i]);
		runcheck_free(&rc);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* --explain and --stats are about the GPU's kernels: asked alone (no
 * --target, no -o) they print only what they say, nothing of the code.
 * Their reports go to standard error, the code to standard output. */
Test(cli, emit_explain_and_stats_alone, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " emit specs/online_softmax.yaml --explain", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "assoc: specs/online_softmax.yaml: template rowmap") && !strstr(out, "__global__"), "%s", out);
	cr_assert_eq(sh(ASSOC " emit specs/online_softmax.yaml --explain", out, sizeof out, 0), 0, "%s", out);
	cr_expect_str_eq(out, "", "standard output holds nothing");
	cr_assert_eq(sh("{ " ASSOC " emit specs/online_softmax.yaml --target cuda --explain 2>build/explain.err; }", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "__global__") && !strstr(out, "template rowmap"), "the code alone on standard output");
	cr_assert_eq(sh("cat build/explain.err", out, sizeof out, 0), 0);
	cr_expect(strstr(out, "assoc: specs/online_softmax.yaml: template rowmap"), "%s", out);
	remove("build/explain.err");
	Nvrtc *nv;
	char msg[4096];
	if (nvrtc_open(&nv, msg, sizeof msg))
		cr_skip_test("--explain held; no NVRTC for --stats: %s", msg);
	cr_assert_eq(sh(ASSOC " emit specs/online_softmax.yaml --stats", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "regs spills") && !strstr(out, ".entry") && !strstr(out, "__global__"), "%s", out);
	cr_assert_eq(sh(ASSOC " emit specs/online_softmax.yaml --stats", out, sizeof out, 0), 0, "%s", out);
	cr_expect_str_eq(out, "", "standard output holds nothing");
}

/* emit refuses a merge whose laws fail on every target, not only CUDA's,
 * unless --trust-merge, which warns. */
Test(cli, emit_refuses_an_unlawful_merge_on_every_target, .timeout = 60)
{
	static const char *targets[] = {"cuda", "ptx", "llvm", "asm"};
	for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " emit tests/laws/forgot_rescale.yaml --target %s -o build/unlawful.out",
			 targets[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 1, "%s: %s", targets[i], out);
		cr_expect(strstr(out, "the merge is not associative") && strstr(out, "refusing to generate code"), "%s: %s",
			  targets[i], out);
		cr_expect_neq(access("build/unlawful.out", F_OK), 0, "%s: no file written", targets[i]);
	}
	/* to a file: the module (vector lanes and all) is longer than out */
	cr_assert_eq(sh(ASSOC " emit tests/laws/forgot_rescale.yaml --target llvm --trust-merge -o build/trusted.ll", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "warning: tests/laws/forgot_rescale.yaml: the merge is not associative"), "%s", out);
	cr_assert_eq(sh("grep -c 'define ' build/trusted.ll", out, sizeof out, 1), 0, "%s", out);
	cr_expect(atoi(out) > 0, "%s", out);
}

/* A --param that the spec does not have (the message lists those it has),
 * or that is not a number, is a usage error for emit as for check: no law
 * failed, and --trust-merge does not make it one to overlook. */
Test(cli, emit_refuses_a_bad_param_as_usage, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " emit specs/sum.yaml --target llvm --param foo=1 -o build/badparam.out", out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "assoc: --param foo: the spec has no param 'foo' (it has none)\n"), "%s", out);
	cr_expect_not(strstr(out, "refusing to generate code"), "%s", out);
	cr_expect_neq(access("build/badparam.out", F_OK), 0, "no file written");
	/* a misspelt name is found in the list of the spec's params */
	cr_assert_eq(sh(ASSOC " emit specs/layer_norm.yaml --target llvm --param epss=1", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "assoc: --param epss: the spec has no param 'epss' (its params: eps)\n"), "%s", out);
	cr_assert_eq(sh(ASSOC " emit specs/layer_norm.yaml --target cuda --trust-merge --param eps=x", out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "--param eps=x: not a number"), "%s", out);
	cr_expect_not(strstr(out, "emitting anyway"), "%s", out);
}

/* An -o path as long as the system takes (PATH_MAX - 1): its temporary
 * name does not fit, so emit says so and leaves the file there as it was;
 * a temporary name cut to the path itself was written over and then
 * removed when the laws failed. */
Test(cli, emit_to_the_longest_path_keeps_the_file, .timeout = 60)
{
	char path[PATH_MAX], cmd[PATH_MAX + 256];
	mkdir("build/longpath", 0755);
	int n = snprintf(path, sizeof path, "build/longpath/");
	while (n < PATH_MAX - 1 - 6)
		n += snprintf(path + n, sizeof path - n, "./");
	n += snprintf(path + n, sizeof path - n, "%s", n == PATH_MAX - 1 - 6 ? "out.ll" : "xout.ll");
	cr_assert_eq(n, PATH_MAX - 1);
	FILE *f = fopen(path, "w");
	cr_assert(f, "the path is one the system takes");
	fputs("kept\n", f);
	fclose(f);
	static const char *specs[] = {"tests/laws/forgot_rescale.yaml", "specs/sum.yaml"};
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof cmd, ASSOC " emit %s --target llvm -o %s", specs[i], path);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", specs[i], out);
		if (i == 1)
			cr_expect(strstr(out, "File name too long"), "%s", out);
		char got[16] = "";
		f = fopen(path, "r");
		cr_assert(f, "%s: the file is still there", specs[i]);
		cr_expect(fgets(got, sizeof got, f) && !strcmp(got, "kept\n"), "%s: as it was, got '%s'", specs[i], got);
		fclose(f);
	}
	unlink(path);
}

/* Output that cannot be written is an error, never a silent exit: a folder
 * as -o, and a full disk on standard output.  Exit 2, as for usage: 1 is
 * a check that failed. */
Test(cli, unwritable_output_says_why)
{
	cr_assert_eq(sh(ASSOC " emit specs/sum.yaml --target cuda -o build", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "assoc: build: cannot write: Is a directory"), "%s", out);
	/* a write that fails on the way (a full disk) is an error, not a short file and exit 0 */
	cr_assert_eq(sh(ASSOC " emit specs/sum.yaml --target llvm -o /dev/full", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "assoc: /dev/full: cannot write: No space left on device"), "%s", out);
	cr_assert_eq(sh(ASSOC " emit specs/sum.yaml --target llvm -o build/no/such/x.ll", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "assoc: build/no/such/x.ll: cannot write: No such file or directory"), "%s", out);
	cr_assert_eq(sh("sh -c '" ASSOC " emit specs/sum.yaml --target cuda 2>&1 >/dev/full'", out, sizeof out, 0), 2);
	cr_expect(strstr(out, "standard output: No space left on device"), "%s", out);
	cr_assert_eq(sh("sh -c '" ASSOC " check specs/sum.yaml 2>&1 >/dev/full'", out, sizeof out, 0), 2);
	cr_expect(strstr(out, "standard output: No space left on device"), "%s", out);
	cr_assert_eq(sh(ASSOC " explore specs/loops/running_sum_max.yaml -o build/no/such/x.yaml", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/no/such/x.yaml: cannot write: No such file or directory"), "%s", out);
}

/* `emit --target ptx` starts loading NVRTC beside its checks; a refusal
 * right after (a configuration the carrier cannot take, an output path
 * that cannot be written) waits for that load before it exits, which
 * crashed in exit or hung on libnvrtc's lock about a third of the time.
 * The build without sanitizers: their timing hid the race; a hang is
 * killed, not waited for. */
Test(cli, refusals_during_nvrtc_load_exit_cleanly, .timeout = 120)
{
	static const char *const cmds[] = {
		"timeout -s KILL 60 build/assoc emit specs/sum.yaml --config rowreduce:tf=1 --target ptx -o /dev/null",
		"timeout -s KILL 60 build/assoc emit specs/sum.yaml --target ptx -o build/no/such/x.ptx",
		"timeout -s KILL 60 build/assoc emit specs/sum.yaml --target ptx --arch sm_80 --config rowreduce:bk=2 -o /dev/null",
	};
	for (int i = 0; i < 3; i++)
		for (int r = 0; r < 6; r++)
			cr_expect_eq(sh(cmds[i], out, sizeof out, 1), 2, "%s (run %d): %s", cmds[i], r, out);
}

/* A writable file in a folder the user cannot write to: the message says
 * it is the folder (the output is made there, then renamed).  Run as
 * another user where this one is root, whom no folder refuses. */
Test(cli, unwritable_folder_is_named, .timeout = 60)
{
	const char *as = "";
	if (geteuid() == 0) {
		if (sh("command -v setpriv", out, sizeof out, 0))
			cr_skip_test("root, and no setpriv to run as another user");
		as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
	}
	char dir[] = "/tmp/assoc-rofolder-XXXXXX", cmd[4096], file[64];
	test_tmpdir(dir);
	snprintf(file, sizeof file, "%s/x.ll", dir);
	FILE *f = fopen(file, "w");
	cr_assert(f);
	fclose(f);
	cr_assert_eq(chmod(file, 0666), 0);
	cr_assert_eq(chmod(dir, 0555), 0);
	char here[PATH_MAX];
	cr_assert(getcwd(here, sizeof here));
	snprintf(cmd, sizeof cmd, "%s%.1500s/" ASSOC " emit %.1500s/specs/sum.yaml --target llvm -o %s", as, here, here,
		 file);
	int rc = sh(cmd, out, sizeof out, 1);
	chmod(dir, 0700), unlink(file), rmdir(dir);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "cannot write: Permission denied (its folder /tmp/assoc-rofolder-") &&
			  strstr(out, "written there first, then renamed into place)"),
		  "%s", out);
}

/* Every --output is checked before the run, and a run writes all its
 * outputs or none. */
Test(cli, outputs_all_or_none, .timeout = 60)
{
	remove("build/all1.npy");
	cr_assert_eq(sh(ASSOC " run specs/logsumexp.yaml --device interp --output lse=build/all1.npy --output nope=build/all2.npy",
			out, sizeof out, 1), 2);
	cr_expect(strstr(out, "no array named 'nope'") && !strstr(out, " ok"), "checked before the run: %s", out);
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/all1.npy "
			"--output var=build/no_such_folder/all2.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/no_such_folder/all2.npy: cannot write: No such file or directory") && !strstr(out, " ok"),
		  "%s", out);
	cr_expect_neq(access("build/all1.npy", F_OK), 0, "no output written");
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/all1.npy", out, sizeof out, 1), 0);
	cr_expect_eq(access("build/all1.npy", F_OK), 0, "%s", out);
	/* a folder at an output's path, or two outputs at one path, is found
	 * before the run; the file already at the first output's path is left
	 * as it was, and no temporary file is left beside it */
	FILE *f = fopen("build/all1.npy", "w");
	cr_assert(f);
	fputs("kept", f);
	fclose(f);
	mkdir("build/all_folder", 0700);
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/all1.npy --output var=build/all_folder",
			out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/all_folder: cannot write: Is a directory") && !strstr(out, " ok"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/all1.npy --output var=build/all1.npy",
			out, sizeof out, 1), 2);
	cr_expect(strstr(out, "--output var=build/all1.npy: build/all1.npy is also --output mean's file"), "%s", out);
	char kept[8] = "";
	f = fopen("build/all1.npy", "r");
	cr_assert(f);
	cr_expect(fgets(kept, sizeof kept, f) && !strcmp(kept, "kept"), "the old file is left: %s", kept);
	fclose(f);
	glob_t g;
	cr_expect_eq(glob("build/.all1.npy.*.tmp", 0, NULL, &g), GLOB_NOMATCH, "no temporary file left");
	globfree(&g);
}

/* A shape is refused before anything is allocated when its arrays would
 * not fit in memory, and a .npy file's shape is held to --rows and --len's
 * limits (an empty array can claim any shape in a few bytes). */
Test(cli, shapes_beyond_memory_or_limits_are_usage_errors)
{
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --rows 16777216 --len 268435456", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "16777216 rows x 268435456 positions need ") && strstr(out, " GiB of memory"), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --rows 16777216 --len 268435456", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "GiB of arrays"), "%s", out);
	Npy a = {.itemsize = 4, .ndim = 2, .shape = {0, (size_t)1 << 30}, .count = 0};
	snprintf(a.descr, sizeof a.descr, "<f4");
	char msg[512];
	cr_assert_eq(npy_write("build/empty_wide.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --input x=build/empty_wide.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "0 rows x 1073741824 positions for input 'x': at most 16777216 rows and 268435456 positions"),
		  "%s", out);
}

/* No query rows: attention runs (nothing to split across blocks) and
 * writes empty outputs. */
Test(cli, attention_without_queries, .timeout = 120)
{
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml -D d=16 -D dv=16 --device emu --rows 0 --len 5", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "0 rows x 5") && strstr(out, "\n  ok (no positions to compare)\n"), "%s", out);
}

/* A scan over rows of length 0 compares nothing: each output says so on
 * every device, not errors of 0 of tolerance that read as a match. */
Test(cli, a_scan_over_empty_rows_says_nothing_was_compared, .timeout = 120)
{
	static const char *const devs[] = {"interp", "cpu", "emu"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " run specs/linear_recurrence.yaml --device %s --rows 2 --len 0", devs[i]);
		int st = sh(cmd, out, sizeof out, 1);
		if (st == 2 && strstr(out, "not usable"))
			continue; /* no CPU backend or emulator in this build */
		cr_assert_eq(st, 0, "%s: %s", cmd, out);
		cr_expect(strstr(out, "\n  A: no positions to compare\n  B: no positions to compare\n"
				      "  ok (no positions to compare)\n"),
			  "%s: %s", cmd, out);
		cr_expect_not(strstr(out, "of tolerance"), "%s: %s", cmd, out);
	}
}

/* i64 inputs from an int64 .npy go in as they are: values over 2^53
 * (which a double rounds) come out of an identity map and a sum exact on
 * the CPU backend, the emulator and the interpreter. */
Test(cli, i64_inputs_stay_exact, .timeout = 120)
{
	FILE *f = fopen("build/i64.yaml", "w");
	cr_assert(f);
	fputs("carrier: i64sum\nelement: {w: i64}\nstate: {s: i64}\nidentity: {s: 0}\nlift: {s: w}\n"
	      "merge: {s: a.s + b.s}\nmap: {y: w}\nlaws: [commutative]\n", f);
	fclose(f);
	int64_t w[2][3] = {{((int64_t)1 << 60) + 1, 1, 2}, {((int64_t)1 << 53) + 1, -((int64_t)1 << 62) - 3, 0}};
	Npy a = {.itemsize = 8, .ndim = 2, .shape = {2, 3}, .count = 6, .data = w};
	snprintf(a.descr, sizeof a.descr, "<i8");
	char msg[300];
	cr_assert_eq(npy_write("build/i64_w.npy", &a, msg, sizeof msg), 0, "%s", msg);
	const char *devs[] = {"cpu", "emu", "interp"};
	for (int d = 0; d < 3; d++) {
		char cmd[400];
		snprintf(cmd, sizeof cmd, ASSOC " run build/i64.yaml --device %s --input w=build/i64_w.npy "
			 "--output s=build/i64_s.npy --output y=build/i64_y.npy", devs[d]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
		Npy sv, yv;
		cr_assert_eq(npy_read("build/i64_s.npy", &sv, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(npy_read("build/i64_y.npy", &yv, msg, sizeof msg), 0, "%s", msg);
		const int64_t *s = sv.data, *y = yv.data;
		cr_expect(s[0] == w[0][0] + 3 && s[1] == w[1][0] + w[1][1], "%s: sums %lld %lld", devs[d], (long long)s[0],
			  (long long)s[1]);
		cr_expect(!memcmp(y, w, sizeof w), "%s: the map gives w back", devs[d]);
		npy_free(&sv);
		npy_free(&yv);
	}
}

/* A rows x cols .npy of descr at path, from data. */
static void npy_2d(const char *path, const char *descr, size_t itemsize, size_t rows, size_t cols, void *data)
{
	Npy a = {.itemsize = itemsize, .ndim = 2, .shape = {rows, cols}, .count = rows * cols, .data = data};
	snprintf(a.descr, sizeof a.descr, "%s", descr);
	char msg[300];
	cr_assert_eq(npy_write(path, &a, msg, sizeof msg), 0, "%s", msg);
}

/* Sums of i64 whose partial sums pass 2^53 are exact on every device and
 * pass against the reference, which sums integers exactly: [2^62, 1,
 * -2^62] is 1 and [2^53 - 2, -2^63, 2^63 - 2048] is 2^53 - 2050.  The
 * float64 reference gave 0 and 2^53 - 2048, failed the cpu and emu
 * devices' exact sums (exit 1) and passed the interpreter's rounded ones. */
Test(cli, i64_sums_past_2_53_pass_exact_on_every_device, .timeout = 120)
{
	int64_t k[2][3] = {{(int64_t)1 << 62, 1, -((int64_t)1 << 62)},
			   {((int64_t)1 << 53) - 2, INT64_MIN, INT64_MAX - 2047}};
	double x[2][3] = {{2, -3, 1}, {2, -3, 1}};
	npy_2d("build/isum64_k.npy", "<i8", 8, 2, 3, k);
	npy_2d("build/isum64_x.npy", "<f8", 8, 2, 3, x);
	char msg[300];
	const char *devs[] = {"cpu", "interp", "emu"};
	for (int d = 0; d < 3; d++) {
		char cmd[400];
		snprintf(cmd, sizeof cmd, ASSOC " run tests/check/i64_sum_past_2_53.yaml --device %s --input k=build/isum64_k.npy"
			 " --input x=build/isum64_x.npy --output s=build/isum64_s.npy", devs[d]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", devs[d], out);
		cr_expect(strstr(out, "  s: max abs error 0, ") && strstr(out, "\n  ok\n") && !strstr(out, "FAIL"), "%s: %s",
			  devs[d], out);
		Npy sv;
		cr_assert_eq(npy_read("build/isum64_s.npy", &sv, msg, sizeof msg), 0, "%s", msg);
		const int64_t *s = sv.data;
		cr_expect(s[0] == 1 && s[1] == ((int64_t)1 << 53) - 2050, "%s: %lld %lld", devs[d], (long long)s[0],
			  (long long)s[1]);
		npy_free(&sv);
	}
}

/* Integer powers and fma stay integer arithmetic in the generated CUDA, as
 * on the CPU and in the interpreter: through double (pow) and float (fma)
 * they rounded an i64 square past 2^53 and an i32 fma past 2^24. */
Test(cli, integer_pow_and_fma_exact_on_every_device, .timeout = 120)
{
	write_text("build/ipow.yaml", "carrier: ipow\nelement: {x: i32, w: i64}\nstate: {s: i64}\nidentity: {s: 0}\n"
				      "lift: {s: w}\nmerge: {s: a.s + b.s}\n"
				      "map: {p: x^2, f: 'fma(x, x, 1)', q: w^2, g: 'fma(w, w, 2)'}\n");
	int32_t x[1] = {46340};
	int64_t w[1] = {94906267};
	npy_2d("build/ipow_x.npy", "<i4", 4, 1, 1, x);
	npy_2d("build/ipow_w.npy", "<i8", 8, 1, 1, w);
	char msg[300];
	const char *devs[] = {"cpu", "emu", "interp"}, *outs[] = {"p", "f", "q", "g"};
	const int64_t want[] = {2147395600, 2147395601, 9007199515875289, 9007199515875291};
	for (int d = 0; d < 3; d++) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, ASSOC " run build/ipow.yaml --device %s --input x=build/ipow_x.npy "
			 "--input w=build/ipow_w.npy --output p=build/ipow_p.npy --output f=build/ipow_f.npy "
			 "--output q=build/ipow_q.npy --output g=build/ipow_g.npy", devs[d]);
		sh(cmd, out, sizeof out, 1);
		for (int o = 0; o < 4; o++) {
			char path[64];
			snprintf(path, sizeof path, "build/ipow_%s.npy", outs[o]);
			Npy v;
			cr_assert_eq(npy_read(path, &v, msg, sizeof msg), 0, "%s: %s\n%s", devs[d], msg, out);
			int64_t got = v.itemsize == 8 ? *(int64_t *)v.data : *(int32_t *)v.data;
			cr_expect_eq(got, want[o], "%s: %s is %lld, not %lld", devs[d], outs[o], (long long)got,
				     (long long)want[o]);
			npy_free(&v);
		}
	}
}

/* A law proved over finite values that a trial with a lifted -inf breaks
 * says why the two disagree; a counterexample of finite states does not. */
Test(cli, proof_over_finite_values_is_named_beside_an_infinite_counterexample)
{
	cr_assert_eq(sh(ASSOC " check tests/laws/minus_inf_skipped_on_one_side.yaml", out, sizeof out, 0), 1, "%s", out);
	cr_expect(strstr(out, "  associative: proved (") && strstr(out, "fails at trial") &&
			  strstr(out, "(the proof is over finite values, this trial's states hold an infinity)"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " check tests/laws/forgot_rescale.yaml", out, sizeof out, 0), 1, "%s", out);
	cr_expect(!strstr(out, "the proof is over finite values"), "%s", out);
}

/* Spec-sized tables, not fixed ones: with 300 element inputs the last one
 * still takes --input (and is checked), and outputs are still found. */
Test(cli, many_arrays_by_name, .timeout = 60)
{
	FILE *f = fopen("build/many.yaml", "w");
	cr_assert(f);
	fputs("carrier: many\nelement: {", f);
	for (int k = 0; k < 300; k++)
		fprintf(f, "%sx%d: f32", k ? ", " : "", k);
	fputs("}\nstate: {s: f32}\nidentity: {s: 0}\nlift: {s: x0 + x299}\nmerge: {s: a.s + b.s}\nfinalize: {t: s}\n"
	      "reference: {t: sum(x0 + x299)}\nlaws: [commutative]\n", f);
	fclose(f);
	remove("build/many_t.npy");
	cr_assert_eq(sh(ASSOC " run build/many.yaml --device interp --rows 2 --len 3 --output t=build/many_t.npy", out,
			sizeof out, 1), 0, "%s", out);
	cr_expect_eq(access("build/many_t.npy", F_OK), 0);
	cr_assert_eq(sh(ASSOC " run build/many.yaml --device interp --rows 2 --len 3 --input x299=build/many_t.npy", out,
			sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "shape (2,) does not fit input 'x299'"), "%s", out);
}

/* A reference that is never finite is never compared: check says so
 * rather than "matches". */
Test(cli, check_fails_a_reference_that_is_never_finite)
{
	write_text("build/never_finite.yaml", "carrier: never_finite\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
					      "lift: {s: x}\nmerge: {s: a.s + b.s}\nfinalize: {t: s}\nreference: {t: sum(x) / 0}\n");
	cr_assert_eq(sh(ASSOC " check build/never_finite.yaml", out, sizeof out, 0), 1, "%s", out);
	cr_expect(strstr(out, "reference: fails: the reference for t is infinite or NaN on every row drawn that is not "
			      "empty, so it was never compared"), "%s", out);
}

static void write_f8(const char *path, const double *v, size_t n)
{
	Npy a = {.itemsize = 8, .ndim = 2, .shape = {1, n}, .count = n, .data = (void *)v};
	snprintf(a.descr, sizeof a.descr, "<f8");
	char msg[512];
	cr_assert_eq(npy_write(path, &a, msg, sizeof msg), 0, "%s", msg);
}

/* An integer input takes whole numbers in its range from a float file;
 * 2.5, 3e9 or NaN are refused with where they are, not cut or wrapped. */
Test(cli, integer_inputs_take_whole_numbers_only, .timeout = 60)
{
	write_text("build/isum.yaml", "carrier: isum\nelement: {n: i32}\nstate: {s: i64}\nidentity: {s: 0}\nlift: {s: n}\n"
				      "merge: {s: a.s + b.s}\nreference: {s: sum(n)}\nlaws: [commutative]\n");
	static const struct {
		double v[3];
		const char *want;
	} cases[] = {
		{{1, 2.5, 3}, "the value 2.5 at flat index 1 is not an i32, the type of input 'n'"},
		{{1, 2, 3e9}, "the value 3000000000 at flat index 2 is not an i32"},
		{{NAN, 2, 3}, "the value nan at flat index 0 is not an i32"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		write_f8("build/isum_n.npy", cases[i].v, 3);
		cr_expect_eq(sh(ASSOC " run build/isum.yaml --device interp --input n=build/isum_n.npy", out, sizeof out, 1), 2,
			     "%s", out);
		cr_expect(strstr(out, cases[i].want), "%s", out);
	}
	write_f8("build/isum_n.npy", (double[]){-2147483648.0, 2147483647.0, 7}, 3);
	cr_assert_eq(sh(ASSOC " run build/isum.yaml --device interp --input n=build/isum_n.npy", out, sizeof out, 1), 0, "%s",
		     out);
}

/* An empty shape has nothing to time: a usage error, not NaN ratios in JSON. */
Test(cli, bench_refuses_empty_shapes)
{
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --rows 0 --json", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "bench: 0 rows x 1000 positions hold nothing to measure") && !strstr(out, "nan"), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device gpu --len 0 --json", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "bench: 4 rows x 0 positions hold nothing to measure"), "%s", out);
}

static void write_f4(const char *path, const float *v, size_t rows, size_t len)
{
	Npy a = {.itemsize = 4, .ndim = 2, .shape = {rows, len}, .count = rows * len, .data = (void *)v};
	snprintf(a.descr, sizeof a.descr, "<f4");
	char msg[512];
	cr_assert_eq(npy_write(path, &a, msg, sizeof msg), 0, "%s", msg);
}

/* Where the float64 reference log(sum(exp(x))) underflows (a row of -1e4
 * padding) or overflows (logits of 800), a right finite result is counted
 * as not compared instead of failing; the row beside it is still checked,
 * and a wrong result there still fails. */
Test(cli, reference_out_of_range_is_not_compared, .timeout = 60)
{
	write_f4("build/padded.npy", (float[]){1, 2, -1e4f, -1e4f, -1e4f, -1e4f, -1e4f, -1e4f, 800, 799, 1, 0.5f}, 3, 4);
	/* the reference written naively, as online_softmax's was */
	write_text("build/softmax_naive.yaml", "carrier: softmax_naive\nelement: {x: f32}\nstate: {m: f32, l: f32}\n"
					       "identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
					       "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
					       "map: {y: exp(x - m) / l}\nreference:\n  lse: log(sum(exp(x)))\n"
					       "  y: exp(x) / sum(exp(x))\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " run build/softmax_naive.yaml --device interp --input x=build/padded.npy", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "lse: max abs error") && strstr(out, ", 2 not compared (the float64 reference overflows or "
								  "underflows there)"), "%s", out);
	cr_expect(strstr(out, "y: max abs error") && strstr(out, ", 6 not compared"), "%s", out);
	/* the bundled reference takes the maximum out: every row compared */
	cr_assert_eq(sh(ASSOC " run specs/online_softmax.yaml --device interp --input x=build/padded.npy", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "lse: max abs error") && !strstr(out, "not compared"), "%s", out);
	write_text("build/lse_off.yaml", "carrier: lse_off\nelement: {x: f32}\nstate: {m: f32, l: f32}\n"
					 "identity: {m: -inf, l: 0}\nlift: {m: x, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
					 "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l) + 0.001}\n"
					 "reference: {lse: log(sum(exp(x)))}\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " run build/lse_off.yaml --device interp --input x=build/padded.npy", out, sizeof out, 1), 1,
		     "the first row is still held to its reference: %s", out);
}

/* --config and --arch are read before anything runs, the same way on every
 * device: a usage error (2) naming what each accepts. */
Test(cli, config_and_arch_are_usage_errors, .timeout = 60)
{
	static const struct {
		const char *dev, *want;
	} cases[] = {
		{"cpu", "--config: unknown --config item 'bogus' (lanes=1..64"},
		{"emu", "unknown kernel family 'bogus' (rowreduce, rowmap, splitk, scan, attention)"},
		{"interp", "--config: the interp device takes no configuration"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " run specs/sum.yaml --device %s --config bogus", cases[i].dev);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", cases[i].dev, out);
		cr_expect(strstr(out, cases[i].want) && !strstr(out, "cpu: cpu:"), "%s: %s", cases[i].dev, out);
	}
	cr_expect_eq(sh(ASSOC " emit specs/sum.yaml --target ptx --arch sm_1", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--arch 'sm_1': sm_NN or compute_NN from 75"), "%s", out);
	cr_expect_eq(sh(ASSOC " emit specs/sum.yaml --target cuda --arch garbage", out, sizeof out, 1), 2, "%s", out);
}

/* A variance 20% too large on rows whose mean is 1000 times their spread
 * fails (the naive float32 error bound, taken whole, let it pass), and the
 * carrier's own result there passes. */
Test(cli, shifted_rows_keep_a_tight_tolerance, .timeout = 60)
{
	float x[4096];
	uint64_t s = 7;
	for (int j = 0; j < 4096; j++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[j] = 1000 + (float)((s >> 40) * 0x1p-24) * 2 - 1;
	}
	write_f4("build/shifted.npy", x, 1, 4096);
	cr_assert_eq(sh(ASSOC " run specs/welford.yaml --device interp --input x=build/shifted.npy", out, sizeof out, 1), 0,
		     "%s", out);
	FILE *f = fopen("specs/welford.yaml", "r");
	cr_assert(f);
	char spec[4096];
	size_t n = fread(spec, 1, sizeof spec - 1, f);
	fclose(f);
	spec[n] = 0;
	static const char var[] = "var: where(abs(mean) < inf, m2 / n, 0 * mean)";
	char *fin = strstr(spec, var);
	cr_assert(fin, "%s", spec);
	char wrong[4200];
	snprintf(wrong, sizeof wrong, "%.*svar: where(abs(mean) < inf, m2 / n * 1.2, 0 * mean)%s", (int)(fin - spec), spec,
		 fin + strlen(var));
	write_text("build/welford_off.yaml", wrong);
	/* its verdict fails it too: --trust-merge lets the run's own comparison show it */
	cr_assert_eq(sh(ASSOC " run build/welford_off.yaml --device interp --input x=build/shifted.npy --trust-merge", out,
			sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "var: max abs error") && strstr(out, "FAILS"), "%s", out);
}

/* --param values are held to the param's type: a finite literal beyond a
 * double, or 2.5 for an integer, is refused rather than rounded away. */
Test(cli, params_are_held_to_their_type, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " run specs/layer_norm.yaml --device interp --param eps=1e999", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--param eps=1e999: beyond a double's range"), "%s", out);
	write_text("build/ksum.yaml", "carrier: ksum\nparams: {k: i32}\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				      "lift: {s: x * k}\nmerge: {s: a.s + b.s}\nfinalize: {t: s}\nreference: {t: sum(x * k)}\n"
				      "laws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " run build/ksum.yaml --device interp --param k=2.5", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--param k=2.5: not an integer in range"), "%s", out);
	cr_assert_eq(sh(ASSOC " run build/ksum.yaml --device interp --param k=3", out, sizeof out, 1), 0, "%s", out);
	/* an i64 param a double holds only rounded is refused, not run as the integer next to it */
	write_text("build/p64.yaml", "carrier: p64\nparams: {n: i64}\nelement: {x: i64}\nstate: {s: i64}\nidentity: {s: 0}\n"
				     "lift: {s: x + n}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n");
	static const char *const big[][2] = {{"9007199254740993", "9007199254740992"},
					     {"9223372036854775807", "9223372036854775808"}};
	for (int i = 0; i < 2; i++) {
		char cmd[300], want[200];
		snprintf(cmd, sizeof cmd, ASSOC " run build/p64.yaml --device interp --rows 1 --len 3 --param n=%s", big[i][0]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
		snprintf(want, sizeof want, "--param n=%s: an i64 past 2^53, which params (doubles) hold only rounded (to %s)",
			 big[i][0], big[i][1]);
		cr_expect(strstr(out, want), "%s", out);
	}
	cr_assert_eq(sh(ASSOC " run build/p64.yaml --device interp --rows 1 --len 3 --param n=9223372036854775808", out,
			sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "not an integer in range"), "%s", out);
	const char *fine[] = {"9007199254740994", "-9223372036854775808"};
	for (int i = 0; i < 2; i++) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, ASSOC " run build/p64.yaml --device interp --rows 1 --len 3 --param n=%s", fine[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", fine[i], out);
	}
}

/* An integer param converts to float in the CPU backend's JIT (the
 * saturating conversion's intrinsic takes both its types) as on the
 * emulator and the interpreter. */
Test(cli, integer_params_on_every_device, .timeout = 120)
{
	write_text("build/kparam.yaml", "carrier: kparam\nparams: {k: i32, big: i64}\nelement: {x: f32}\nstate: {s: f32}\n"
					"identity: {s: 0}\nlift: {s: x * k + big}\nmerge: {s: a.s + b.s}\nfinalize: {t: s}\n"
					"reference: {t: sum(x * k + big)}\nlaws: [commutative]\n");
	ok_on_every_device("build/kparam.yaml", "--rows 3 --len 33 --param k=3 --param big=-2");
}

/* sigmoid in float64 is 1 / (1 + exp(-x)) in the generated CUDA too (it
 * took exp(x) there, sigmoid(-x)); the emulator runs that code. */
Test(cli, f64_sigmoid_on_every_device, .timeout = 120)
{
	write_text("build/sig64.yaml", "carrier: sig64\nelement: {x: f64}\nstate: {u: f64}\nidentity: {u: 0}\n"
				       "lift: {u: sigmoid(x) + sigmoid(-2 * x)}\nmerge: {u: a.u + b.u}\n"
				       "reference: {u: sum(sigmoid(x) + sigmoid(-2 * x))}\nlaws: [commutative]\n");
	ok_on_every_device("build/sig64.yaml", "--rows 3 --len 33");
}

/* Integers meet fractions as floats: `/` divides (j / 2 is 0.5 at j = 1,
 * not 0), `j + 0.5` is f32 and an i64 over 2 is f64.  Row of 3 positions:
 * h = 0 + 0.5 + 1 = 1.5 and c = sum of (j + 0.5) / len = 1.5; the
 * expected figures are written out, as the reference goes through the
 * same typing.  Then on every device against that reference. */
Test(cli, integers_meeting_fractions_become_floats, .timeout = 120)
{
	write_text("build/frac.yaml", "carrier: frac\nelement: {x: f32, n: i64}\nstate: {h: f32, c: f32, w: f64}\n"
				      "identity: {h: 0, c: 0, w: 0}\nlift:\n  h: j / 2\n  c: (j + 0.5) / len\n"
				      "  w: x * n / 2\nmerge: {h: a.h + b.h, c: a.c + b.c, w: a.w + b.w}\n"
				      "reference:\n  h: sum(j / 2)\n  c: sum((j + 0.5) / len)\n  w: sum(x * n / 2)\n"
				      "laws: [commutative]\n");
	static const char *devs[] = {"cpu", "emu", "interp"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		char cmd[512], msg[256];
		snprintf(cmd, sizeof cmd, ASSOC " run build/frac.yaml --device %s --rows 1 --len 3 --output h=build/frac_h.npy "
			 "--output c=build/frac_c.npy", devs[i]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", devs[i], out);
		Npy h = {0}, c = {0};
		cr_assert_eq(npy_read("build/frac_h.npy", &h, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(npy_read("build/frac_c.npy", &c, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(npy_get(&h, 0), 1.5, "%s: h = %g", devs[i], npy_get(&h, 0));
		cr_expect_eq(npy_get(&c, 0), 1.5, "%s: c = %g", devs[i], npy_get(&c, 0));
		npy_free(&h);
		npy_free(&c);
	}
	ok_on_every_device("build/frac.yaml", "--rows 3 --len 33");
}

/* Past what a GPU gives a thread, the emulator and the gpu device refuse
 * with the dims, before anything runs (emu::wide_states_and_inputs_in_the_fibers'
 * stacks runs what fits). */
Test(cli, states_and_inputs_past_a_threads_memory_are_refused, .timeout = 120)
{
	write_text("build/wide64.yaml", "carrier: wide64\ndims: {d: 8}\nelement:\n  x: f32[d]\nstate:\n  s: f64[d]\n"
					"identity: {s: 0}\nlift: {s: x}\nmerge: {s: a.s + b.s}\nreference: {s: sum(x)}\n"
					"laws: [commutative]\n");
	static const char *devs[] = {"emu", "gpu"};
	for (int k = 0; k < 2; k++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "ASSOC_LIBCUDA=build/libfakecuda.so ASSOC_NVRTC=build/libfakenvrtc.so " ASSOC
			 " run build/wide64.yaml -D d=45000 --device %s --rows 1 --len 2", devs[k]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", devs[k], out);
		cr_expect(strstr(out, "540000 bytes") && strstr(out, "(d = 45000)") && strstr(out, "at most 512 KiB"),
			  "%s: %s", devs[k], out);
	}
}

/* The CPU backend holds each vector component as its own value, and its
 * compile time grows faster than linearly with them: past its limits it
 * refuses (exit 2: nothing ran), naming the input and dim, and within
 * them it compiles. */
Test(cli, wide_vectors_on_the_cpu_are_bounded, .timeout = 240)
{
	/* q and k are read only by dot product loops: no limit of 1024 */
	cr_expect_eq(sh("ASSOC_NO_CPU_CACHE=1 " ASSOC " run specs/attention.yaml -D d=2048 --device cpu --rows 2 --len 50",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "\n  ok\n"), "%s", out);
	write_text("build/wide1.yaml", "carrier: wide1\ndims: {d: 2000}\nelement: {x: 'f32[d]'}\nstate: {s: f32}\n"
				       "identity: {s: 0}\nlift: {s: 'dot(x + x, x)'}\nmerge: {s: a.s + b.s}\n");
	cr_expect_eq(sh(ASSOC " run build/wide1.yaml --device cpu --rows 2 --len 5", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "element input 'x' has 2000 components (dim d)") && strstr(out, "at most 1024"), "%s", out);
	write_text("build/wide5.yaml", "carrier: wide5\ndims: {d: 1000}\nelement: {x: 'f32[d]', y: 'f32[d]', "
				       "z: 'f32[d]', w: 'f32[d]', u: 'f32[d]'}\nstate: {s: f32}\nidentity: {s: 0}\n"
				       "lift: {s: 'dot(x + y, z + w) + dot(u + x, u)'}\nmerge: {s: a.s + b.s}\n");
	cr_expect_eq(sh(ASSOC " run build/wide5.yaml --device cpu --rows 2 --len 5", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "5000 components in all (d = 1000)") && strstr(out, "at most 4096"), "%s", out);
	cr_expect_eq(sh("ASSOC_NO_CPU_CACHE=1 " ASSOC " run specs/attention.yaml -D d=256 -D dv=256 --device cpu --rows 2 "
			"--len 50",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "\n  ok\n"), "%s", out);
}

/* An empty -o is a usage error with a message: emit failed silently with
 * 1, explore printed the spec and then a nameless system error. */
Test(cli, empty_output_name_is_a_usage_error, .timeout = 60)
{
	static const char *cmds[] = {ASSOC " emit specs/sum.yaml --target cuda -o ''",
				     ASSOC " explore specs/loops/horner.yaml -o ''"};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		cr_expect_eq(sh(cmds[i], out, sizeof out, 1), 2, "%s: %s", cmds[i], out);
		cr_expect(strstr(out, "-o needs a file name") && !strstr(out, "carrier spec:"), "%s: %s", cmds[i], out);
	}
}

/* A scan's reference is evaluated over prefixes and held to the outputs
 * there: right, it passes on every device; wrong, it fails, where the
 * left fold alone had passed it. */
Test(cli, scan_outputs_are_held_to_the_reference_over_prefixes, .timeout = 120)
{
	static const char scan[] = "carrier: pscan\nelement: {x: f32}\nmask: j != 3\nstate: {s: f32, n: f32}\n"
				   "identity: {s: 0, n: 0}\nlift: {s: x, n: 1}\nmerge: {s: a.s + b.s, n: a.n + b.n}\n"
				   "finalize: {s: s, mean: s / n}\nreference: {s: sum(x)%s, mean: sum(x) / count()}\n"
				   "laws: [commutative]\ntemplate: scan\n";
	char text[1024];
	snprintf(text, sizeof text, scan, "");
	write_text("build/pscan.yaml", text);
	snprintf(text, sizeof text, scan, " * 2");
	write_text("build/pscan_wrong.yaml", text);
	static const char *devs[] = {"interp", "cpu", "emu"};
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " run build/pscan.yaml --device %s --rows 3 --len 100", devs[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", devs[i], out);
		cr_expect(strstr(out, "and the float64 reference over 16 prefixes a row"), "%s: %s", devs[i], out);
		/* the verdict refuses it; trusted, the run's comparison fails it */
		snprintf(cmd, sizeof cmd, ASSOC " run build/pscan_wrong.yaml --device %s --rows 3 --len 100 --trust-merge",
			 devs[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 1, "%s: %s", devs[i], out);
		cr_expect(strstr(out, "  s: max abs error") && strstr(out, "FAILS"), "%s: %s", devs[i], out);
	}
}

/* Mappings keep their order in lift and identity too: a field may use the
 * fields above it (the lifted m in l, the identity's l in t), on every device. */
Test(cli, lift_and_identity_use_fields_above, .timeout = 120)
{
	write_text("build/lift_order.yaml", "carrier: lift_order\nelement: {x: f32}\nstate: {m: f32, l: f32, t: f32}\n"
					    "identity: {m: -inf, l: 0, t: l}\nlift: {m: x * 3, l: exp(x * 3 - m), t: l + m * 0}\n"
					    "merge:\n  m: max(a.m, b.m)\n  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n"
					    "  t: a.t * exp(a.m - m) + b.t * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
					    "reference: {lse: log(sum(exp(x * 3)))}\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " check build/lift_order.yaml", out, sizeof out, 1), 0, "%s", out);
	ok_on_every_device("build/lift_order.yaml", "--rows 3 --len 40");
	write_text("build/lift_below.yaml", "carrier: lift_below\nelement: {x: f32}\nstate: {m: f32, l: f32}\n"
					    "identity: {m: -inf, l: 0}\nlift: {m: l, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
					    "  l: a.l + b.l\n");
	cr_assert_eq(sh(ASSOC " check build/lift_below.yaml", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "build/lift_below.yaml:5:11: error:") && strstr(out, "fields lifted above"), "%s", out);
}

/* A bool field's identity may be written 0 or 1, and a bool param takes
 * true, false, 0 or 1 (nothing else). */
Test(cli, bool_constants_and_params, .timeout = 120)
{
	write_text("build/anyneg.yaml", "carrier: anyneg\nparams: {on: bool}\nelement: {x: f32}\nstate: {hit: bool}\n"
					"identity: {hit: 0}\nlift: {hit: x < 0 && on}\nmerge:\n  hit: a.hit || b.hit\n"
					"finalize: {neg: hit}\nreference: {neg: min(x) < 0 && on}\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " check build/anyneg.yaml", out, sizeof out, 1), 0, "%s", out);
	static const char *vals[] = {"true", "false", "1", "0"};
	for (size_t i = 0; i < 4; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " run build/anyneg.yaml --device cpu --rows 3 --len 20 --param on=%s", vals[i]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", vals[i], out);
	}
	cr_assert_eq(sh(ASSOC " run build/anyneg.yaml --device interp --param on=2", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--param on=2: not a bool (true, false, 0 or 1)"), "%s", out);
}

/* Options as getopt_long takes them: --name=value, -- before spec files,
 * --help after a command; --help's output is checked for write errors. */
Test(cli, options_take_values_after_equals_and_help_anywhere)
{
	cr_expect_eq(sh(ASSOC " check --help", out, sizeof out, 0), 0);
	cr_expect(strstr(out, "usage: assoc check [options] SPEC..."), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --rows=3 --len=5 --device=interp --seed=4", out, sizeof out, 1), 0, "%s",
		     out);
	cr_expect(strstr(out, "3 rows x 5") && strstr(out, "  ok"), "%s", out);
	cr_expect_eq(sh(ASSOC " check --trials=300 -- specs/sum.yaml", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "holds in 300 trials"), "%s", out);
	cr_expect_eq(sh(ASSOC " check specs/sum.yaml --strict=1", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "--strict takes no value"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --rows abc", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "got 'abc'"), "%s", out);
	cr_expect_eq(sh("(" ASSOC " --help > /dev/full)", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "standard output: No space left on device"), "%s", out);
	cr_expect_eq(sh("(" ASSOC " --version > /dev/full)", out, sizeof out, 1), 2);
}

/* An option given twice, or a file's shape against --rows and --len,
 * is refused rather than the last or the file silently winning. */
Test(cli, repeated_and_contradicting_options_are_refused)
{
	static float x[2 * 3];
	Npy a = {.ndim = 2, .shape = {2, 3}, .count = 6, .itemsize = 4, .data = x};
	strcpy(a.descr, "<f4");
	char msg[512];
	cr_assert_eq(npy_write("build/cli_x23.npy", &a, msg, sizeof msg), 0, "%s", msg);
	static const char *bad[][2] = {
		{" check specs/layer_norm.yaml --param eps=1e-5 --param eps=-5", "--param eps is given twice"},
		{" run specs/sum.yaml --input x=build/cli_x23.npy --input x=build/cli_x23.npy", "--input x is given twice"},
		{" run specs/welford.yaml --output mean=build/m1.npy --output mean=build/m2.npy", "--output mean is given twice"},
		{" run specs/sum.yaml --input x=build/cli_x23.npy --rows 5", "--input x=build/cli_x23.npy: 2 rows, but --rows 5"},
		{" run specs/sum.yaml --input x=build/cli_x23.npy --len 7", "3 positions, but --len 7"},
		{" run specs/attention.yaml --device interp --rows 3 --len 5 -D d=4 -D dv=4 --input q=build/cli_x23.npy",
		 "--input q=build/cli_x23.npy: 2 rows, but --rows 3"},
		{" tune specs/sum.yaml --rows 0", "tune: 0 rows x 1000 positions hold nothing to measure"},
		{" run specs/sum.yaml --rows 2 --rows=3", "--rows is given twice"},
		{" check specs/sum.yaml --json --json", "--json is given twice"},
		{" check specs/sum.yaml --seed 3 --seed=4", "--seed is given twice"},
		{" run specs/welford.yaml --output mean=build/m1.npy --output var=", "--output var= needs a file name"},
		{" run specs/welford.yaml --output mean=build/m1.npy --output var=./build/m1.npy",
		 "./build/m1.npy is also --output mean's file"},
		{" emit specs/sum.yaml --target cuda --config bogus", "--config: configuration 'bogus'"},
		/* a key of --config given twice, as an option is; a count of
		 * lanes the CPU's kernels would take as a smaller one */
		{" run specs/online_softmax.yaml --device emu --rows 2 --len 300 --config rowmap:nt=128,nt=256",
		 "--config: configuration 'rowmap:nt=128,nt=256': key 'nt' is given twice"},
		{" emit specs/sum.yaml --target cuda --config rowreduce:nt=64,acc=2,nt=64", "key 'nt' is given twice"},
		{" run specs/online_softmax.yaml --device cpu --rows 2 --len 300 --config lanes=8,lanes=16",
		 "--config: lanes is given twice"},
		{" run specs/online_softmax.yaml --device cpu --rows 2 --len 300 --config lanes=3",
		 "--config: lanes=3: lanes takes a power of two from 1 to 64"},
		{" emit specs/sum.yaml --target llvm --config accs=6", "accs=6: accs takes a power of two from 1 to 16"},
		{" bench specs/sum.yaml --device cpu --rows 2 --len 64 --config rows=12,lanes=4",
		 "rows=12: rows takes a power of two from 1 to 16"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, ASSOC "%s", bad[k][0]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 2, "%s: %s", bad[k][0], out);
		cr_expect(strstr(out, bad[k][1]), "%s: %s", bad[k][0], out);
	}
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --device interp --input x=build/cli_x23.npy --rows 2 --len 3", out,
			sizeof out, 1),
		     0, "%s", out);
	struct stat st;
	cr_expect(stat("build/m1.npy", &st) && stat("build/m2.npy", &st), "no output written");
}

/* An output never replaces a file the command reads. */
Test(cli, outputs_never_replace_the_inputs)
{
	cr_assert_eq(system("cp specs/sum.yaml build/own.yaml && cp specs/loops/running_sum_max.yaml build/own_loop.yaml"),
		     0);
	cr_expect_eq(sh(ASSOC " emit build/own.yaml --target cuda -o build/own.yaml", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "-o build/own.yaml: that is the spec build/own.yaml"), "%s", out);
	cr_expect_eq(sh(ASSOC " explore build/own_loop.yaml -o ./build/own_loop.yaml", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "that is the spec build/own_loop.yaml"), "%s", out);
	cr_expect_eq(system("cmp -s specs/sum.yaml build/own.yaml && cmp -s specs/loops/running_sum_max.yaml "
			    "build/own_loop.yaml"),
		     0, "both left as they were");
}

/* check --json: one object per spec, loop specs and --param errors too
 * (naming the spec); explore -o -: the carrier spec alone on standard
 * output, its errors on standard error. */
Test(cli, json_and_stdout_carry_only_their_own)
{
	cr_expect_eq(sh(ASSOC " check --json --trials 300 specs/sum.yaml specs/loops/softmax_update.yaml", out, sizeof out,
			0),
		     2);
	cr_expect(strstr(out, "{\"file\": \"specs/sum.yaml\"") &&
			  strstr(out, "{\"file\": \"specs/loops/softmax_update.yaml\", \"ok\": false, \"error\": "),
		  "%s", out);
	cr_expect_eq(sh(ASSOC " check --json specs/sum.yaml --param nosuch=1", out, sizeof out, 0), 2);
	cr_expect(strstr(out, "\"error\": \"assoc: specs/sum.yaml: --param nosuch: the spec has no param 'nosuch'"), "%s",
		  out);
	cr_expect_eq(sh("(" ASSOC " explore specs/loops/running_sum_max.yaml -o - > build/explored.yaml)", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "carrier spec:"), "the report on standard error: %s", out);
	cr_expect_eq(sh(ASSOC " check --trials 300 build/explored.yaml", out, sizeof out, 1), 0, "%s", out);
	cr_expect_eq(sh(ASSOC " explore specs/loops/horner.yaml --param t=abc", out, sizeof out, 0), 2);
	cr_expect_str_eq(out, "", "nothing on standard output");
	cr_expect_eq(sh("(" ASSOC " explore specs/loops/horner.yaml --param t=abc 2>&1 >/dev/null)", out, sizeof out, 0), 2);
	cr_expect(strstr(out, "assoc: specs/loops/horner.yaml: --param t=abc: not a number"), "%s", out);
}

/* --verbose says what ran on the cpu too; emu runs no split past the
 * row's end; bench --device auto takes the GPU where one is usable. */
Test(cli, devices_say_what_ran, .timeout = 120)
{
	cr_expect_eq(sh(ASSOC " run specs/attention.yaml --device cpu --rows 40 --len 100 --verbose", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "cpu: lanes=1,accs=1,tile=8,rows=") && strstr(out, "rows side by side as lanes"), "%s",
		  out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --device emu --rows 3 --len 100 --split 65536 --verbose", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, ", split 25,"), "%s", out);
	cr_expect_eq(sh(ASSOC " bench specs/attention.yaml --device cpu --rows 32 --len 64 --split 2 --json", out,
			sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"split\": 2,") && strstr(out, "\"rows_as_lanes\": "), "%s", out);
	sh("ASSOC_LIBCUDA=build/libfakecuda.so " ASSOC " bench specs/sum.yaml --rows 4 --len 1000", out, sizeof out, 1);
	cr_expect(strstr(out, "bench --device gpu") || strstr(out, " on gpu"), "%s", out);
}

/* emit --target llvm and asm take the CPU's --config: the variant shown
 * is the one that runs; a bad one is a usage error that writes nothing. */
Test(cli, emit_shows_cpu_variants, .timeout = 120)
{
	cr_expect_eq(sh(ASSOC " emit specs/attention.yaml --target llvm --config rows=4,tile=3 -o build/emit_rows4.ll", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect_eq(sh("grep -c 'define void @assoc_reduce_rows' build/emit_rows4.ll", out, sizeof out, 0), 0);
	cr_expect_str_eq(out, "1\n");
	cr_expect_eq(sh("grep -c '<4 x float>' build/emit_rows4.ll", out, sizeof out, 0), 0, "rows as 4 lanes");
	cr_expect_eq(sh(ASSOC " emit specs/attention.yaml --target asm --config rows=1 -o build/emit_rows1.s", out, sizeof out,
			1),
		     0, "%s", out);
	cr_expect_eq(sh("grep -c '^assoc_reduce_rows:' build/emit_rows1.s", out, sizeof out, 0), 1, "rows=1: no such function");
	/* one row at a time in one lane (8-lane vectors: no keys as lanes),
	 * the keys and values are prefetched (kern_prefetch_cols); keys as
	 * lanes leave it to the hardware */
	cr_expect_eq(sh("ASSOC_CPU=haswell " ASSOC " emit specs/attention.yaml --target asm --config rows=1 "
			"-o build/emit_rows1_avx2.s && awk '/^assoc_reduce:/,/^.Lfunc_end/' build/emit_rows1_avx2.s | "
			"grep -c prefetcht0",
			out, sizeof out, 0),
		     0);
	cr_expect(atoi(out) >= 8, "%s prefetches in assoc_reduce", out);
	unlink("build/emit_bad.s");
	cr_expect_eq(sh(ASSOC " emit specs/attention.yaml --target asm --config rows=99 -o build/emit_bad.s", out, sizeof out,
			1),
		     2);
	cr_expect(strstr(out, "--config: rows needs a whole number from 1 to 16"), "%s", out);
	cr_expect(access("build/emit_bad.s", F_OK) != 0, "nothing written");
}

/* Heads on the CPU: run and bench take them, one run over all the heads,
 * whose few rows (decoding) go in chunks of their keys. */
Test(cli, cpu_runs_and_benches_heads, .timeout = 120)
{
	cr_expect_eq(sh(ASSOC " run tests/attention/full.yaml --device cpu --rows 1 --len 4096 --heads 4 --kv-heads 2 "
			      "--verbose",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, ", split 2, 4 heads as 2 views of 2 rows\n") && strstr(out, "4 heads on 2 key/value heads") &&
			  strstr(out, "  ok"),
		  "%s", out);
	cr_expect_eq(sh(ASSOC " bench tests/attention/full.yaml --device cpu --rows 1 --len 4096 --heads 4 --kv-heads 2 "
			      "--threads 2 --json",
			out, sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, "\"heads\": 4, \"kv_heads\": 2,") && strstr(out, "\"split\": 2,"), "%s", out);
	/* attention's GFLOP/s: 4 d flops a query-key pair (d = 64, no mask),
	 * 4 x 1 x 4096 pairs, in the time that moved the bytes */
	const char *by = strstr(out, "\"bytes\": "), *gb = strstr(out, "\"gbps\": "), *gf = strstr(out, "\"gflops\": ");
	cr_expect(by && gb && gf, "%s", out);
	if (by && gb && gf)
		cr_expect(fabs(atof(gf + 10) / atof(gb + 8) * atof(by + 9) / (256.0 * 4 * 4096) - 1) < 0.01, "%s", out);
	/* decoding streams its keys: it is held to the copy, as its JSON is */
	cr_expect_eq(sh(ASSOC " bench tests/attention/full.yaml --device cpu --rows 1 --len 4096 --heads 4 --kv-heads 2 "
			      "--threads 2",
			out, sizeof out, 0),
		     0, "%s", out);
	cr_expect(strstr(out, " GFLOP/s (") && strstr(out, "  kernel/copy ") && !strstr(out, "compute-bound"), "%s", out);
	cr_expect_eq(sh(ASSOC " bench specs/online_softmax.yaml --device cpu --rows 4 --len 1000 --json", out, sizeof out, 0),
		     0, "%s", out);
	cr_expect(!strstr(out, "gflops"), "softmax has no attention flops: %s", out);
	cr_expect_eq(sh(ASSOC " bench tests/attention/full.yaml --device cpu --rows 20 --len 100 --heads 2", out, sizeof out,
			0),
		     0, "%s", out);
	cr_expect(strstr(out, "20 rows x 100, 2 heads on 2 key/value heads,") && strstr(out, "kernel/copy"), "%s", out);
}

/* Small things said right: a bool --param's error, a folder as --input,
 * the heads in run's header; ASSOC_NO_CPU_CACHE=0 keeps the cache. */
Test(cli, small_messages_say_what_is_wrong, .timeout = 120)
{
	cr_expect_eq(sh(ASSOC " check tests/prove/bool_param_else_fails.yaml --param flag=maybe", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "--param flag=maybe: not a bool (true, false, 0 or 1)"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --input x=build", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build: cannot read: Is a directory"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/attention.yaml --device interp --rows 3 --len 20 --heads 4 --kv-heads 2", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "3 rows x 20, 4 heads on 2 key/value heads"), "%s", out);
	cr_assert_eq(system("rm -rf build/cache_zero"), 0);
	struct stat st;
	cr_expect_eq(sh("XDG_CACHE_HOME=$PWD/build/cache_zero ASSOC_NO_CPU_CACHE=0 " ASSOC " run specs/sum.yaml --device cpu",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(!stat("build/cache_zero/assoc/cpu", &st), "=0 keeps the cache");
	/* a cache limit that is not a number is refused, not taken as 1024 */
	cr_expect_eq(sh("ASSOC_CACHE_MB=2G " ASSOC " check specs/sum.yaml", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "assoc: ASSOC_CACHE_MB=2G: not a whole number of megabytes (0 or more)") &&
			  !strstr(out, "carrier"),
		  "%s", out);
	cr_expect_eq(sh("ASSOC_CACHE_MB= " ASSOC " check specs/sum.yaml", out, sizeof out, 1), 0, "empty is unset: %s",
		     out);
}

/* An output keeps the mode of the file it replaces; /dev/stdout goes to
 * the descriptor the shell opened (an append stays an append); a dangling
 * link's target appears only with the whole output; two outputs whose
 * long names share their first 180 bytes keep apart. */
Test(cli, outputs_keep_modes_descriptors_and_names, .timeout = 120)
{
	cr_assert_eq(system("rm -f build/o_priv.npy build/o_dl.npy build/o_target.npy && touch build/o_priv.npy && "
			    "chmod 600 build/o_priv.npy && ln -s o_target.npy build/o_dl.npy && echo first > build/o_ap.txt"),
		     0);
	cr_expect_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/o_priv.npy", out, sizeof out, 1),
		     0, "%s", out);
	struct stat st;
	cr_expect(!stat("build/o_priv.npy", &st) && (st.st_mode & 0777) == 0600 && st.st_size > 100, "mode kept");
	cr_expect_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/o_dl.npy --output nosuch=x.npy",
			out, sizeof out, 1),
		     2);
	cr_expect(stat("build/o_target.npy", &st), "no target made by a run that did not happen");
	cr_expect_eq(sh(ASSOC " run specs/welford.yaml --device interp --output mean=build/o_dl.npy", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(!lstat("build/o_dl.npy", &st) && S_ISLNK(st.st_mode) && !stat("build/o_target.npy", &st), "link kept");
	cr_expect_eq(sh("(" ASSOC " emit specs/sum.yaml --target llvm --trials 200 -o /dev/stdout >> build/o_ap.txt)", out,
			sizeof out, 1),
		     0, "%s", out);
	FILE *f = fopen("build/o_ap.txt", "r");
	char line[16] = "";
	cr_assert(f);
	cr_expect(fgets(line, sizeof line, f) && !strcmp(line, "first\n"), "the append kept the first line: %s", line);
	fclose(f);
	char cmd[1024], a[256], b[256];
	memset(a, 'p', 200), a[200] = 0;
	snprintf(b, sizeof b, "%s", a);
	cr_expect_eq(snprintf(cmd, sizeof cmd, ASSOC " run specs/welford.yaml --device interp --output mean=build/%sX "
			     "--output var=build/%sY", a, b) < (int)sizeof cmd, 1);
	cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	snprintf(cmd, sizeof cmd, "build/%sX", a);
	cr_expect(!stat(cmd, &st) && st.st_size == 128 + 4 * 4, "mean, 4 rows: %ld bytes", (long)st.st_size);
	unlink(cmd);
	snprintf(cmd, sizeof cmd, "build/%sY", a);
	unlink(cmd);
}

/* The one verdict: check, emit and run each refuse the attention whose
 * lse is NaN on an empty row (the reference gives 0), with the same line
 * naming the output and the empty row; --trust-merge lets emit and run go
 * ahead with a warning, and run --len 0 then fails on that output. */
Test(cli, every_command_refuses_nan_on_an_empty_row, .timeout = 120)
{
	const char *line = "tests/check/sink_nan_empty.yaml: the results disagree with the reference: lse is NaN on an "
			   "empty row (length 0) but the reference gives 0";
	remove("build/sink.ll"); /* left by an earlier run that failed half way */
	cr_assert_eq(sh(ASSOC " check tests/check/sink_nan_empty.yaml", out, sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "reference: fails: lse is NaN on an empty row (length 0) but the reference gives 0"), "%s",
		  out);
	cr_assert_eq(sh(ASSOC " emit tests/check/sink_nan_empty.yaml --target llvm -o build/sink.ll", out, sizeof out, 1), 1,
		     "%s", out);
	cr_expect(strstr(out, line) && strstr(out, "refusing to generate code"), "%s", out);
	cr_expect_neq(access("build/sink.ll", F_OK), 0, "no file written");
	cr_assert_eq(sh(ASSOC " run tests/check/sink_nan_empty.yaml --device interp --len 0", out, sizeof out, 1), 1, "%s",
		     out);
	cr_expect(strstr(out, line) && strstr(out, "refusing to run it"), "%s", out);
	cr_expect_not(strstr(out, "on interp"), "the run did not start: %s", out);
	cr_assert_eq(sh(ASSOC " emit tests/check/sink_nan_empty.yaml --target llvm --trust-merge -o build/sink.ll", out,
			sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "warning: ") && strstr(out, line) && strstr(out, "emitting anyway (--trust-merge)"), "%s", out);
	remove("build/sink.ll");
	cr_assert_eq(sh(ASSOC " run tests/check/sink_nan_empty.yaml --device interp --len 0 --trust-merge", out, sizeof out,
			1), 1, "%s", out);
	cr_expect(strstr(out, "running anyway (--trust-merge)"), "%s", out);
	cr_expect(strstr(out, "lse: ") && strstr(out, "NaN or infinity where the reference differs"), "%s", out);
}

/* A merge that is lawful but whose results are not its reference's: check
 * fails it, and emit refuses it now as it refuses a failed law. */
Test(cli, emit_refuses_a_carrier_its_reference_fails, .timeout = 60)
{
	remove("build/wrong.ll"); /* left by an earlier run that failed half way */
	cr_assert_eq(sh(ASSOC " check tests/laws/associative_but_wrong.yaml", out, sizeof out, 0), 1, "%s", out);
	cr_assert_eq(sh(ASSOC " emit tests/laws/associative_but_wrong.yaml --target llvm -o build/wrong.ll", out, sizeof out,
			1), 1, "%s", out);
	cr_expect(strstr(out, "tests/laws/associative_but_wrong.yaml: the results disagree with the reference: lse is"), "%s",
		  out);
	cr_expect(strstr(out, "refusing to generate code"), "%s", out);
	cr_expect_neq(access("build/wrong.ll", F_OK), 0, "no file written");
	cr_assert_eq(sh(ASSOC " emit tests/laws/associative_but_wrong.yaml --target llvm --trust-merge -o build/wrong.ll",
			out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "the results disagree with the reference") && strstr(out, "emitting anyway"), "%s", out);
	cr_expect_eq(access("build/wrong.ll", F_OK), 0, "written with --trust-merge");
	remove("build/wrong.ll");
	cr_assert_eq(sh(ASSOC " run tests/laws/associative_but_wrong.yaml --device interp", out, sizeof out, 1), 1, "%s",
		     out);
	cr_expect(strstr(out, "refusing to run it"), "%s", out);
}

/* A lawful carrier runs as before: no warning, nothing refused. */
Test(cli, run_takes_a_lawful_carrier_quietly, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " run specs/online_softmax.yaml --device interp", out, sizeof out, 1), 0, "%s", out);
	cr_expect_not(strstr(out, "warning"), "%s", out);
	cr_expect(strstr(out, "  ok\n"), "%s", out);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f, "%s", path);
	cr_assert_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* A .npy file of version 1 with header text hdr and data bytes of zeros. */
static void npy_text(const char *path, const char *hdr, size_t data)
{
	char buf[1024] = "\x93NUMPY\x01\x00";
	size_t hl = strlen(hdr);
	buf[8] = (char)(hl & 0xff), buf[9] = (char)(hl >> 8);
	memcpy(buf + 10, hdr, hl);
	memset(buf + 10 + hl, 0, data);
	write_bytes(path, buf, 10 + hl + data);
}

/* A small file whose header claims 2^30 float64 values is refused, by
 * the file's size, before anything is allocated for them: under a
 * 64 MB bound on any one allocation the run still says what is wrong. */
Test(cli, npy_sizes_are_checked_against_the_file, .timeout = 120)
{
	npy_text("build/npy_huge.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824,), }      \n", 96);
	cr_expect_eq(sh("ASAN_OPTIONS=max_allocation_size_mb=64:allocator_may_return_null=0 " ASSOC
			" run specs/sum.yaml --device interp --input x=build/npy_huge.npy",
			out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "build/npy_huge.npy: data is shorter than the header's shape says (96 bytes, not 8589934592)"),
		  "%s", out);
	/* read from a pipe, whose size is not known, the same */
	cr_expect_eq(sh("ASAN_OPTIONS=max_allocation_size_mb=64:allocator_may_return_null=0 " ASSOC
			" run specs/sum.yaml --device interp --input x=/dev/stdin <build/npy_huge.npy",
			out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "/dev/stdin: data is shorter than the header's shape says"), "%s", out);
}

/* The header is the dict NumPy writes: fortran_order the word False (not
 * a longer word starting with it), each key once, no other keys. */
Test(cli, npy_headers_are_read_as_numpy_reads_them)
{
	static const struct {
		const char *hdr;
		const char *want;
	} cases[] = {
		{"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,), }", "fortran_order is neither True nor False"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,), }", "'shape' given twice"},
		{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "'descr' given twice"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", "a key 'extra'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", "malformed shape"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", "not a dict in braces"},
		{"{'descr': '<f4', 'shape': (1,), }", "needs descr, fortran_order and shape"},
	};
	char msg[400];
	Npy a;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		npy_text("build/npy_hdr.npy", cases[i].hdr, 8);
		cr_expect_eq(npy_read("build/npy_hdr.npy", &a, msg, sizeof msg), -1, "%s", cases[i].hdr);
		cr_expect(strstr(msg, cases[i].want) && strstr(msg, "build/npy_hdr.npy: "), "%s: %s", cases[i].want, msg);
	}
	/* what NumPy writes reads: spaces, a trailing comma or none, two dims */
	npy_text("build/npy_hdr.npy", "{'descr':'<f4','fortran_order':False,'shape':(1, 2)}  \n", 8);
	cr_assert_eq(npy_read("build/npy_hdr.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_expect(a.ndim == 2 && a.shape[0] == 1 && a.shape[1] == 2 && a.count == 2);
	npy_free(&a);
}

/* Inputs from files that break assume are a usage error naming the row,
 * position and value: run and bench alike, before anything runs. */
Test(cli, given_inputs_that_break_assume_are_refused, .timeout = 60)
{
	write_text("build/wlog.yaml", "carrier: wlog\nelement: {w: f32}\nassume: w > 0\nstate: {s: f32}\n"
				      "identity: {s: 0}\nlift: {s: log(w)}\nmerge: {s: a.s + b.s}\nreference: {s: sum(log(w))}\n"
				      "laws: [commutative]\n");
	write_f8("build/wlog_w.npy", (double[]){1, 2, -0.25, 4}, 4);
	static const char *const cmds[] = {" run build/wlog.yaml --device interp --input w=build/wlog_w.npy",
					   " bench build/wlog.yaml --device cpu --threads 1 --input w=build/wlog_w.npy"};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		char line[256];
		snprintf(line, sizeof line, ASSOC "%s", cmds[i]);
		cr_expect_eq(sh(line, out, sizeof out, 1), 2, "%s", out);
		cr_expect(strstr(out, "--input: row 0, position 2: input w = -0.25 breaks 'assume' (w > 0)"), "%s", out);
		cr_expect(!strstr(out, "ok") && !strstr(out, "GB/s"), "nothing ran: %s", out);
	}
	write_f8("build/wlog_w.npy", (double[]){1, 2, 0.25, 4}, 4);
	cr_assert_eq(sh(ASSOC " run build/wlog.yaml --device interp --input w=build/wlog_w.npy", out, sizeof out, 1), 0,
		     "%s", out);
}

static void npy_file(const char *path, const char *descr, size_t itemsize, void *data)
{
	npy_2d(path, descr, itemsize, 2, 3, data);
}

/* An input file of another dtype than the spec's input is converted with
 * a note on standard error saying so (float64 into f32, int64 into i32,
 * float32 into f16), or refused where a value would be lost: out of an
 * integer type's range, not integral, past a float type's range. */
Test(cli, npy_of_another_dtype_converted_or_refused)
{
	write_text("build/dtypes.yaml", "carrier: dtypes\nelement: {x: f32, n: i32, h: f16}\nstate: {s: f32}\n"
					"identity: {s: 0}\nlift: {s: x + n + h}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n");
	double x[6] = {0.1, 1, 2, 3, 4, 5}, xf[6] = {2.5, 1, 2, 3, 4, 5};
	int64_t n[6] = {1, 2, 3, -4, 5, 6}, big[6] = {1, 2, (int64_t)1 << 40, 4, 5, 6};
	float h[6] = {0.5f, 1, 2, 3, 4, 0.1f}, hbig[6] = {0.5f, 1e5f, 2, 3, 4, 5};
	npy_file("build/dt_x.npy", "<f8", 8, x);
	npy_file("build/dt_xf.npy", "<f8", 8, xf);
	npy_file("build/dt_n.npy", "<i8", 8, n);
	npy_file("build/dt_big.npy", "<i8", 8, big);
	npy_file("build/dt_h.npy", "<f4", 4, h);
	npy_file("build/dt_hbig.npy", "<f4", 4, hbig);
	cr_assert_eq(sh(ASSOC " run build/dtypes.yaml --device interp --input x=build/dt_x.npy --input n=build/dt_n.npy "
			"--input h=build/dt_h.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "assoc: note: build/dt_x.npy holds float64; converted to f32, the type of input 'x' "
			      "(1 of 6 values rounded)"),
		  "%s", out);
	cr_expect(strstr(out, "build/dt_n.npy holds int64; converted to i32, the type of input 'n' (every value fits)"),
		  "%s", out);
	cr_expect(strstr(out, "build/dt_h.npy holds float32; converted to f16, the type of input 'h' (1 of 6 values "
			      "rounded)"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " run build/dtypes.yaml --device interp --input n=build/dt_big.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/dt_big.npy: the value 1099511627776 at flat index 2 is not an i32, the type of input "
			      "'n': converting would lose it"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " run build/dtypes.yaml --device interp --input n=build/dt_xf.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "the value 2.5 at flat index 0 is not an i32"), "%s", out);
	cr_assert_eq(sh(ASSOC " run build/dtypes.yaml --device interp --input h=build/dt_hbig.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "the value 100000 at flat index 1 is past the range of f16, the type of input 'h'"), "%s",
		  out);
	cr_assert_eq(sh(ASSOC " run build/dtypes.yaml --device interp --input x=build/dt_h.npy --input n=build/dt_n.npy "
			"2>&1 >/dev/null | grep -c 'note:'",
			out, sizeof out, 0),
		     0);
	cr_expect_eq(atoi(out), 1, "float32 into f32: no note; int64 into i32: one: %s", out);
}

/* A uint16 .npy holds an f16 input's own bit patterns (as the Python
 * package takes them), and a bf16 input's: 0x3c00 is 1 in f16 and
 * 0.0078125 in bf16; no note, and --output writes the same file back. */
Test(cli, npy_uint16_is_the_bits_of_an_inputs_16_bit_type, .timeout = 60)
{
	write_text("build/copy16.yaml", "carrier: copy16\nelement: {h: f16, b: bf16}\nstate: {s: f32}\n"
					"identity: {s: 0}\nlift: {s: h + b}\nmerge: {s: a.s + b.s}\nmap: {y: h, z: b}\n"
					"laws: [commutative]\n");
	uint16_t bits[4] = {0x3c00, 0xc000, 0x3555, 0x0001};
	Npy a = {.descr = "<u2", .itemsize = 2, .ndim = 2, .shape = {1, 4}, .count = 4, .data = bits};
	char msg[300];
	cr_assert_eq(npy_write("build/u16_bits.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run build/copy16.yaml --device interp --input h=build/u16_bits.npy "
			"--input b=build/u16_bits.npy --output y=build/u16_y.npy --output z=build/u16_z.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(!strstr(out, "note:"), "bits as they are: %s", out);
	Npy y, z;
	cr_assert_eq(npy_read("build/u16_y.npy", &y, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read("build/u16_z.npy", &z, msg, sizeof msg), 0, "%s", msg);
	double fy[4] = {1, -2, 0x1.554p-2, 0x1p-24}, fz[4] = {0x1p-7, -2, 0x1.aap-21, 0x1p-133};
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(npy_get(&y, i), fy[i], "f16 bits %#x: %.9g", bits[i], npy_get(&y, i));
		cr_expect_eq(npy_get(&z, i), fz[i], "bf16 bits %#x: %.9g", bits[i], npy_get(&z, i));
	}
	npy_free(&y), npy_free(&z);
}

/* For any other input, uint8 and uint16 files hold unsigned integers
 * (labels, pixels), converted with the note: 1, 2, 200 and 40000, not the
 * values their bits would be as f8e4m3 or bf16. */
Test(cli, npy_uint8_and_uint16_are_integers_for_other_inputs, .timeout = 60)
{
	write_text("build/copyu.yaml", "carrier: copyu\nelement: {x: f32, n: i32}\nstate: {s: f32}\n"
				       "identity: {s: 0}\nlift: {s: x + n}\nmerge: {s: a.s + b.s}\nmap: {y: x, k: n}\n"
				       "laws: [commutative]\n");
	uint8_t u8[4] = {1, 2, 200, 0};
	uint16_t u16[4] = {1, 2, 40000, 0};
	Npy a = {.descr = "|u1", .itemsize = 1, .ndim = 2, .shape = {1, 4}, .count = 4, .data = u8};
	Npy b = {.descr = "<u2", .itemsize = 2, .ndim = 2, .shape = {1, 4}, .count = 4, .data = u16};
	char msg[300];
	cr_assert_eq(npy_write("build/u8_ints.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_write("build/u16_ints.npy", &b, msg, sizeof msg), 0, "%s", msg);
	const char *pairs[][2] = {{"u8", "u16"}, {"u16", "u8"}};
	for (int t = 0; t < 2; t++) {
		char cmd[400];
		snprintf(cmd, sizeof cmd,
			 ASSOC " run build/copyu.yaml --device interp --input x=build/%s_ints.npy --input n=build/%s_ints.npy "
			       "--output y=build/u_y.npy --output k=build/u_k.npy",
			 pairs[t][0], pairs[t][1]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
		char want[200];
		snprintf(want, sizeof want, "holds %s; converted to f32, the type of input 'x' (0 of 4 values rounded)",
			 t ? "uint16" : "uint8");
		cr_expect(strstr(out, want), "%s", out);
		snprintf(want, sizeof want, "holds %s; converted to i32, the type of input 'n' (every value fits)",
			 t ? "uint8" : "uint16");
		cr_expect(strstr(out, want), "%s", out);
		Npy y, k;
		cr_assert_eq(npy_read("build/u_y.npy", &y, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(npy_read("build/u_k.npy", &k, msg, sizeof msg), 0, "%s", msg);
		for (int i = 0; i < 4; i++) {
			double wy = t ? u16[i] : u8[i], wk = t ? u8[i] : u16[i];
			cr_expect_eq(npy_get(&y, i), wy, "x[%d]: %.9g", i, npy_get(&y, i));
			cr_expect_eq(npy_get(&k, i), wk, "n[%d]: %.9g", i, npy_get(&k, i));
		}
		npy_free(&y), npy_free(&k);
	}
}

/* An f8e4m3 input takes a uint8 .npy as its bit patterns as they are (no
 * note: NumPy has no such type) and writes them back the same as --output;
 * a float file is converted with a note counting the values rounded, and
 * refused where a value lies past the type's range (it saturates at 448,
 * and has no infinity). */
Test(cli, npy_uint8_is_f8e4m3_bits, .timeout = 60)
{
	write_text("build/copy8.yaml", "carrier: copy8\nelement: {x: f8e4m3}\nstate: {s: f32}\nidentity: {s: 0}\n"
				       "lift: {s: x}\nmerge: {s: a.s + b.s}\nmap: {y: x}\nlaws: [commutative]\n");
	uint8_t bits[256];
	for (int b = 0; b < 256; b++)
		bits[b] = (uint8_t)b; /* both NaNs too: 0xff comes back as itself */
	Npy a = {.descr = "|u1", .itemsize = 1, .ndim = 2, .shape = {2, 128}, .count = 256, .data = bits};
	char msg[300];
	cr_assert_eq(npy_write("build/f8_x.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run build/copy8.yaml --device interp --rows 2 --len 128 --input x=build/f8_x.npy "
			"--output x=build/f8_back.npy --output y=build/f8_y.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(!strstr(out, "note:"), "bits as they are: %s", out);
	Npy back, y;
	cr_assert_eq(npy_read("build/f8_back.npy", &back, msg, sizeof msg), 0, "%s", msg);
	cr_expect_str_eq(back.descr, "|u1");
	cr_expect(back.count == 256 && !memcmp(back.data, bits, 256), "the same 256 bytes back");
	cr_assert_eq(npy_read("build/f8_y.npy", &y, msg, sizeof msg), 0, "%s", msg);
	cr_expect_str_eq(y.descr, "<f4");
	for (int b = 0; b < 256; b++)
		cr_expect(npy_get(&y, b) == npy_get(&back, b) || (isnan(npy_get(&y, b)) && isnan(npy_get(&back, b))),
			  "y = x at %d", b);
	npy_free(&back), npy_free(&y);
	float f[256];
	for (int b = 0; b < 256; b++)
		f[b] = b == 3 ? 0.3f : b - 128.0f;
	Npy fl = {.descr = "<f4", .itemsize = 4, .ndim = 2, .shape = {2, 128}, .count = 256, .data = f};
	cr_assert_eq(npy_write("build/f8_f.npy", &fl, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run build/copy8.yaml --device interp --rows 2 --len 128 --input x=build/f8_f.npy", out,
			sizeof out, 1),
		     0, "%s", out);
	/* -128..127 and 0.3: the odd ones past 16, the ones past 32 not a
	 * multiple of 4, past 64 of 8, and 0.3 (-125 stood there) */
	int rounded = 0;
	for (int b = 0; b < 256; b++) {
		double v = b == 3 ? (double)0.3f : b - 128.0;
		rounded += ir_round(TY_F8E4M3, v) != v;
	}
	char note[200];
	snprintf(note, sizeof note, "assoc: note: build/f8_f.npy holds float32; converted to f8e4m3, the type of input 'x' "
				    "(%d of 256 values rounded)", rounded);
	cr_expect(strstr(out, note), "%s in %s", note, out);
	f[7] = 500;
	cr_assert_eq(npy_write("build/f8_f.npy", &fl, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run build/copy8.yaml --device interp --rows 2 --len 128 --input x=build/f8_f.npy", out,
			sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "build/f8_f.npy: the value 500 at flat index 7 is past the range of f8e4m3, the type of "
			      "input 'x': converting would lose it"),
		  "%s", out);
}

/* Long work shows a progress line on standard error when it is a
 * terminal (script gives the command one), cleared at the end; in a pipe
 * standard error stays quiet. */
Test(cli, progress_on_a_terminal_quiet_in_a_pipe, .timeout = 120)
{
	const char *run = ASSOC " run specs/sum.yaml --device interp --rows 60 --len 100000";
	char cmd[512];
	snprintf(cmd, sizeof cmd, "ASSOC_PROGRESS_AFTER=0 %s 2>&1 >/dev/null", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
	cr_expect_str_empty(out, "nothing on standard error in a pipe: %s", out);
	if (sh("command -v script", out, sizeof out, 0))
		cr_skip("no script(1) here to give the command a terminal");
	/* shown from the first tick: the run's time varies with the machine's load */
	snprintf(cmd, sizeof cmd, "ASSOC_PROGRESS_AFTER=0 script -qec '%s' /dev/null | tr '\\r' '\\n'", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 0), 0, "%s", out);
	cr_expect(strstr(out, "  specs/sum.yaml: running on interp (60 rows x 100000) ... "), "%s", out);
	cr_expect(strstr(out, "  ok"), "%s", out);
}

/* A carrier of the user's has no loop in bench/naive.c: bench says so and
 * what it compares the kernel with instead. */
Test(cli, bench_of_a_user_carrier_says_what_it_compares_with, .timeout = 120)
{
	write_text("build/mysum.yaml", "carrier: mysum\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				       "lift: {s: x}\nmerge: {s: a.s + b.s}\nreference: {s: sum(x)}\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " bench build/mysum.yaml --device cpu --threads 1 --rows 4 --len 256", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "naive  unavailable: no naive_mysum in ") &&
			  strstr(out, "bench/naive.c\n         (the kernel is compared with the copy alone: kernel/copy below)"),
		  "%s", out);
	cr_expect(strstr(out, "  kernel/copy "), "%s", out);
	/* its own naive C, by ASSOC_NAIVE_C: the report names that file */
	write_text("build/naive_mysum.c", "#include <stdint.h>\n"
					  "typedef struct { const void *const *in; void *const *out; const double *params;\n"
					  "  int64_t rows, len, period, qpos; const int64_t *width; } Args;\n"
					  "void naive_mysum(const Args *a, int64_t lo, int64_t hi) {\n"
					  "  for (int64_t i = lo; i < hi; i++) { float s = 0;\n"
					  "    for (int64_t j = 0; j < a->len; j++) s += ((const float *)a->in[0])[i * a->len + j];\n"
					  "    ((float *)a->out[0])[i] = s; } }\n");
	cr_assert_eq(sh("ASSOC_NAIVE_C=build/naive_mysum.c " ASSOC " bench build/mysum.yaml --device cpu --threads 1 --rows 4 "
			"--len 256", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, " GB/s  (build/naive_mysum.c, ") && strstr(out, " -O3 -march=native)\n") &&
			  strstr(out, "kernel/naive ") && !strstr(out, "bench/naive.c"),
		  "%s", out);
	/* and the bundled one by its path, without the executable's build/.. */
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --threads 1 --rows 4 --len 256", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "/bench/naive.c, ") && !strstr(out, "build/../"), "%s", out);
	remove("build/naive_mysum.c");
}

/* A NaN reference takes a NaN only, on every device: the sum and the max
 * whose lifts replace NaN by a number fail on the row holding one, saying
 * so as they say a NaN against a number; specs/max.yaml, which skips NaN
 * as its reference does, passes on the same rows. */
Test(cli, run_fails_a_number_where_the_reference_is_nan, .timeout = 180)
{
	float x[3 * 40];
	for (int k = 0; k < 3 * 40; k++)
		x[k] = (float)((k * 37) % 23) - 11;
	x[40 + 20] = NAN;
	write_f4("build/nanrow.npy", x, 3, 40);
	static const char *const specs[] = {"tests/check/nan_sum_replaced.yaml", "tests/check/nan_max_replaced.yaml",
					    "specs/max.yaml"};
	static const char *const devs[] = {"interp", "cpu", "emu"};
	for (int s = 0; s < 3; s++)
		for (int d = 0; d < 3; d++) {
			char cmd[300];
			snprintf(cmd, sizeof cmd, ASSOC " run %s --device %s --input x=build/nanrow.npy", specs[s], devs[d]);
			int rc = sh(cmd, out, sizeof out, 1);
			if (s == 2) {
				cr_expect_eq(rc, 0, "%s: %s", cmd, out);
				cr_expect(strstr(out, "  ok\n"), "%s: %s", cmd, out);
				continue;
			}
			cr_expect_eq(rc, 1, "%s: %s", cmd, out);
			cr_expect(strstr(out, ", 1 NaN or infinity where the reference differs (the first at flat index 1) "
					      "FAILS"), "%s: %s", cmd, out);
			cr_expect(strstr(out, "\n  FAILED\n"), "%s: %s", cmd, out);
		}
}

/* Rows whose weights are all 0 give NaN on both sides: ok, with the count
 * of values matched as NaN and no errors of 0 that read as a match. */
Test(cli, run_says_what_was_compared_as_nan_only, .timeout = 60)
{
	float x[2 * 6] = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, w[2 * 6] = {0};
	write_f4("build/wm_x.npy", x, 2, 6);
	write_f4("build/wm_w.npy", w, 2, 6);
	cr_assert_eq(sh(ASSOC " run tests/check/weighted_mean.yaml --device interp --input x=build/wm_x.npy "
			      "--input w=build/wm_w.npy", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "  mean: no value compared by size (against the float64 reference), 2 of 2 values NaN in "
			      "both (not compared by size)\n"), "%s", out);
	cr_expect(strstr(out, "\n  ok (no value compared by size)\n"), "%s", out);
	w[3] = 1; /* row 0 has a weight: its mean is compared */
	write_f4("build/wm_w.npy", w, 2, 6);
	cr_assert_eq(sh(ASSOC " run tests/check/weighted_mean.yaml --device interp --input x=build/wm_x.npy "
			      "--input w=build/wm_w.npy", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "  mean: max abs error ") && strstr(out, ", 1 of 2 values NaN in both"), "%s", out);
	cr_expect(strstr(out, "\n  ok\n"), "%s", out);
}

/* bench reaches the verdict run and emit reach: a merge whose laws fail is
 * not timed, on either device, unless --trust-merge, which warns. */
Test(cli, bench_refuses_an_unlawful_merge, .timeout = 120)
{
	static const char *const devs[] = {"cpu", "gpu"};
	for (int d = 0; d < 2; d++) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, ASSOC " bench tests/laws/pairwise_average.yaml --device %s --rows 4 --len 64",
			 devs[d]);
		cr_assert_eq(sh(cmd, out, sizeof out, 1), 1, "%s: %s", cmd, out);
		cr_expect(strstr(out, "tests/laws/pairwise_average.yaml: ") &&
				  strstr(out, "; refusing to time it (--trust-merge to go ahead anyway)"),
			  "%s: %s", cmd, out);
		cr_expect_not(strstr(out, "GB/s"), "nothing timed: %s", out);
	}
	cr_assert_eq(sh(ASSOC " bench tests/laws/pairwise_average.yaml --device cpu --rows 4 --len 64 --trust-merge", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "warning: ") && strstr(out, "benchmarking anyway (--trust-merge)"), "%s", out);
	cr_expect(strstr(out, "kernel "), "%s", out);
	cr_assert_eq(sh(ASSOC " bench specs/sum.yaml --device cpu --rows 4 --len 64", out, sizeof out, 1), 0, "%s", out);
	cr_expect_not(strstr(out, "warning"), "a lawful carrier is timed quietly: %s", out);
}

/* tune reaches the same verdict before it opens a GPU: an unlawful merge
 * has no tuned choice to store.  --trust-merge goes on to the device (none
 * here), with a warning. */
Test(cli, tune_refuses_an_unlawful_merge, .timeout = 120)
{
	cr_assert_eq(sh(ASSOC " tune tests/laws/pairwise_average.yaml --rows 4 --len 64", out, sizeof out, 1), 1, "%s",
		     out);
	cr_expect(strstr(out, "tests/laws/pairwise_average.yaml: ") &&
			  strstr(out, "; refusing to tune it (--trust-merge to go ahead anyway)"),
		  "%s", out);
	cr_expect_not(strstr(out, "needs a GPU"), "refused before any device: %s", out);
	sh(ASSOC " tune tests/laws/pairwise_average.yaml --rows 4 --len 64 --trust-merge", out, sizeof out, 1);
	cr_expect(strstr(out, "warning: ") && strstr(out, "tuning anyway (--trust-merge)"), "%s", out);
}

/* Inputs written by --output with heads read back without --heads or
 * --kv-heads: their leading axes set them, as their other axes set --rows
 * and --len; files that disagree are named. */
Test(cli, heads_come_from_the_inputs_shape, .timeout = 120)
{
	const char *run = ASSOC " run specs/attention.yaml -D d=32 -D dv=32 --device interp --param scale=0.25";
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s --heads 4 --kv-heads 2 --rows 3 --len 7 --output q=build/h4q.npy "
		 "--output k=build/h4k.npy --output v=build/h4v.npy --output lse=build/h4lse.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	snprintf(cmd, sizeof cmd, "%s --heads 3 --kv-heads 1 --rows 3 --len 7 --output q=build/h3q.npy "
		 "--output v=build/h1v.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	snprintf(cmd, sizeof cmd, "%s --seed 9 --input q=build/h4q.npy --input k=build/h4k.npy --input v=build/h4v.npy "
		 "--output lse=build/h4lse2.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "3 rows x 7, 4 heads on 2 key/value heads"), "%s", out);
	Npy l1, l2;
	char msg[512];
	cr_assert_eq(npy_read("build/h4lse.npy", &l1, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_read("build/h4lse2.npy", &l2, msg, sizeof msg), 0, "%s", msg);
	cr_assert(l2.ndim == 2 && l2.shape[0] == 4 && l2.shape[1] == 3 && l2.count == l1.count);
	for (size_t i = 0; i < l1.count; i++)
		cr_expect_eq(npy_get(&l1, i), npy_get(&l2, i), "lse %zu", i);
	npy_free(&l1), npy_free(&l2);
	/* --heads given: the key/value heads still come from k */
	snprintf(cmd, sizeof cmd, "%s --heads 4 --input q=build/h4q.npy --input k=build/h4k.npy --input v=build/h4v.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "4 heads on 2 key/value heads"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s --input q=build/h4q.npy --input k=build/h4k.npy --input v=build/h1v.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--input v=build/h1v.npy: 1 key/value heads on its leading axis, but --input "
			      "k=build/h4k.npy has 2"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s --input q=build/h3q.npy --input k=build/h4k.npy --input v=build/h4v.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "3 heads (--input q=build/h3q.npy) are not a multiple of 2 key/value heads (--input "
			      "k=build/h4k.npy)"), "%s", out);
	/* given, the options are held to as before */
	snprintf(cmd, sizeof cmd, "%s --heads 2 --kv-heads 2 --input q=build/h4q.npy", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "shape (4, 3, 32) does not fit input 'q' of 3 rows, per head: expected (2, 3, 32)"), "%s",
		  out);
}

/* A one-component row input written as (rows, 1), the layout's [rows][w]
 * with w = 1, beside an element input without a head axis: the trailing
 * 1 is dropped, not its 4 rows taken for 4 heads (which then blamed x's
 * (4, 33)).  Alone, or with --heads, (4, 1) is still 4 heads of a row. */
Test(cli, a_trailing_axis_of_one_is_no_head_axis, .timeout = 60)
{
	write_text("build/rowt.yaml", "carrier: rowt\nrow: {t: f32}\nelement: {x: f32}\nstate: {s: f32}\n"
				      "identity: {s: 0}\nlift: {s: x + t}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n"
				      "reference: {s: sum(x + t)}\n");
	float t[4] = {1, 2, 3, 4}, x[4 * 33];
	for (int i = 0; i < 4 * 33; i++)
		x[i] = (float)(i % 7) * 0.25f;
	Npy a = {.descr = "<f4", .itemsize = 4, .ndim = 2, .shape = {4, 1}, .count = 4, .data = t};
	Npy b = {.descr = "<f4", .itemsize = 4, .ndim = 2, .shape = {4, 33}, .count = 4 * 33, .data = x};
	char msg[300];
	cr_assert_eq(npy_write("build/rowt_t.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_write("build/rowt_x.npy", &b, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run build/rowt.yaml --device interp --input x=build/rowt_x.npy --input t=build/rowt_t.npy "
			      "--output s=build/rowt_s.npy", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "4 rows x 33 (") && !strstr(out, "heads"), "%s", out);
	Npy r;
	cr_assert_eq(npy_read("build/rowt_s.npy", &r, msg, sizeof msg), 0, "%s", msg);
	cr_assert(r.ndim == 1 && r.shape[0] == 4);
	for (int i = 0; i < 4; i++) {
		double want = 33 * t[i];
		for (int j = 0; j < 33; j++)
			want += x[i * 33 + j];
		cr_expect_eq(npy_get(&r, i), want, "row %d: %.9g", i, npy_get(&r, i));
	}
	npy_free(&r);
	cr_assert_eq(sh(ASSOC " run build/rowt.yaml --device interp --input t=build/rowt_t.npy", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "1 rows x 1000, 4 heads"), "%s", out);
}

/* An array of the wrong rank is told the axes its input takes and the
 * options they stand for, not the default 4 x 1000 nobody gave. */
Test(cli, wrong_rank_names_the_axes_an_input_takes)
{
	double v[] = {1, 2, 3, 4, 5};
	Npy a = {.itemsize = 8, .ndim = 1, .shape = {5}, .count = 5, .data = v};
	snprintf(a.descr, sizeof a.descr, "<f8");
	char msg[512];
	cr_assert_eq(npy_write("build/rank1.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device interp --input x=build/rank1.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/rank1.npy: shape (5,) does not fit input 'x', an element input: it takes "
			      "[rows][len] or [heads][rows][len] (the shape sets --heads, --rows and --len where they are "
			      "not given)"), "%s", out);
	cr_expect_not(strstr(out, "1000"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/attention.yaml -D d=32 -D dv=32 --device interp --heads 2 --param scale=1 "
			      "--input k=build/rank1.npy", out, sizeof out, 1), 2);
	cr_expect(strstr(out, "build/rank1.npy: shape (5,) does not fit input 'k', a column input: it takes "
			      "[kv_heads][len][32], or [len][32] with --kv-heads 1 (the shape sets --kv-heads and --len "
			      "where they are not given)"),
		  "%s", out);
}

/* Keys and values of one key/value head may leave its axis out, as a 2-D
 * q is one query head: (len, d) is (1, len, d) with --kv-heads 1. */
Test(cli, two_dim_keys_are_one_kv_head, .timeout = 60)
{
	static double q[4 * 3 * 32], kv[7 * 32];
	for (size_t i = 0; i < sizeof q / sizeof *q; i++)
		q[i] = (double)(i % 7) / 7 - 0.5;
	for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
		kv[i] = (double)(i % 5) / 5 - 0.4;
	Npy a = {.itemsize = 8, .ndim = 3, .shape = {4, 3, 32}, .count = 4 * 3 * 32, .data = q};
	Npy b = {.itemsize = 8, .ndim = 2, .shape = {7, 32}, .count = 7 * 32, .data = kv};
	snprintf(a.descr, sizeof a.descr, "<f8");
	snprintf(b.descr, sizeof b.descr, "<f8");
	char msg[512];
	cr_assert_eq(npy_write("build/q4h.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(npy_write("build/kv2d.npy", &b, msg, sizeof msg), 0, "%s", msg);
	const char *run = ASSOC " run specs/attention.yaml -D d=32 -D dv=32 --device interp --param scale=0.5 "
			      "--input q=build/q4h.npy --input k=build/kv2d.npy --input v=build/kv2d.npy";
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s --kv-heads 1", run);
	cr_assert_eq(sh(cmd, out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "3 rows x 7, 4 heads on 1 key/value heads"), "%s", out);
	cr_assert_eq(sh(run, out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "build/kv2d.npy: shape (7, 32) does not fit input 'k', a column input: it takes "
			      "[kv_heads][len][32], or [len][32] with --kv-heads 1"), "%s", out);
}

/* A --config fitted to the carrier or the target (a ring over the shared
 * memory, accumulators of a merge that does not commute) runs with a note
 * on stderr naming the keys that changed and the variant that runs; one
 * that fits as given, without. */
Test(cli, config_fitted_is_said, .timeout = 120)
{
	cr_assert_eq(sh(ASSOC " run specs/online_softmax.yaml --device emu --arch sm_90a --rows 2 --len 30001 "
			      "--config rowmap:nt=1024,acc=4,vec=4,bk=8", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, "assoc: note: --config rowmap:nt=1024,acc=4,vec=4,bk=8 does not fit this carrier and "
			      "target as given") && strstr(out, ": acc=4 -> 2, bk=8 -> 7; running "
							  "rowmap:nt=1024,acc=2,vec=4,warp=0,items=0,bk=7\n"),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/linear_recurrence.yaml --device emu --rows 2 --len 300 "
			      "--config scan:nt=64,acc=4,vec=1,items=4", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, ": acc=4 -> 1; running scan:nt=64,acc=1,vec=1,warp=0,items=4\n"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/online_softmax.yaml --device emu --rows 2 --len 3001 "
			      "--config rowmap:nt=256,acc=2,vec=4", out, sizeof out, 1), 0, "%s", out);
	cr_expect_not(strstr(out, "note: --config"), "%s", out);
	/* emit says it too, once, for what it writes */
	cr_assert_eq(sh(ASSOC " emit specs/online_softmax.yaml --target cuda --config rowmap:nt=1024,acc=4,vec=4,bk=8 "
			      "-o /dev/null", out, sizeof out, 1), 0, "%s", out);
	cr_expect(strstr(out, ": acc=4 -> 2, bk=8 -> 7; emitting rowmap:nt=1024,acc=2,vec=4,warp=0,items=0,bk=7\n"), "%s",
		  out);
}

/* --config names the key that is wrong for the spec's family, and the
 * values it takes there. */
Test(cli, config_names_the_key_out_of_range, .timeout = 60)
{
	cr_assert_eq(sh(ASSOC " run specs/linear_recurrence.yaml --device emu --rows 2 --len 64 "
			      "--config scan:nt=64,acc=1,vec=1,warp=0,items=0", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "configuration 'scan:nt=64,acc=1,vec=1,warp=0,items=0': items=0: scan takes items 1 to "
			      "64"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/sum.yaml --device emu --rows 2 --len 64 --config rowreduce:nt=64,un=3", out,
			sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "un=3: rowreduce takes un 1, 2 or 4"), "%s", out);
	cr_assert_eq(sh(ASSOC " run specs/linear_recurrence.yaml --device emu --rows 2 --len 64 "
			      "--config scan:nt=64,acc=1,vec=1,warp=0,items=4", out, sizeof out, 1), 0, "%s", out);
}

/* A param that breaks assume is named as such, by run and by check (exit
 * 2, as for a bad --param; check said only "could not draw inputs where
 * 'assume' holds"): nothing could be drawn, and with --input nothing is.
 * It is a value refused, no misused option: no pointer to --help, which a
 * misused option still gets. */
Test(cli, a_param_that_breaks_assume_is_named, .timeout = 60)
{
	write_text("build/softmax_t.yaml", "carrier: softmax_temp\nparams: {temp: f32}\nassume: temp > 0 && temp < 9\n"
					   "element: {x: f32}\nlet:\n  z: x / temp\nstate: {m: f32, l: f32}\n"
					   "identity: {m: -inf, l: 0}\nlift: {m: z, l: 1}\nmerge:\n  m: max(a.m, b.m)\n"
					   "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\nfinalize: {lse: m + log(l)}\n"
					   "reference:\n  lse: log(sum(exp(z)))\nlaws: [commutative]\n");
	cr_assert_eq(sh(ASSOC " run build/softmax_t.yaml --device interp --rows 2 --len 5 --param temp=2 "
			      "--output x=build/softmax_t_x.npy", out, sizeof out, 1), 0, "%s", out);
	cr_assert_eq(sh(ASSOC " run build/softmax_t.yaml --device interp --param temp=-1 --input x=build/softmax_t_x.npy",
			out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "param temp = -1 breaks 'assume' (temp > 0)"), "%s", out);
	cr_expect_not(strstr(out, "could not draw"), "%s", out);
	cr_expect_not(strstr(out, "assoc --help"), "%s", out);
	cr_assert_eq(sh(ASSOC " run build/softmax_t.yaml --device interp --param temp=300", out, sizeof out, 1), 2, "%s",
		     out);
	cr_expect(strstr(out, "assoc: param temp = 300 breaks 'assume' (temp < 9)\n"), "%s", out);
	cr_expect_not(strstr(out, "assoc --help"), "%s", out);
	cr_assert_eq(sh(ASSOC " run build/softmax_t.yaml --device interp --rows -1 --param temp=2", out, sizeof out, 1),
		     2, "%s", out);
	cr_expect(strstr(out, "\n(see assoc --help)\n"), "a misused option: %s", out);
	cr_assert_eq(sh(ASSOC " check build/softmax_t.yaml --param temp=-1", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "assoc: build/softmax_t.yaml: param temp = -1 breaks 'assume' (temp > 0)"), "%s", out);
	cr_expect_not(strstr(out, "could not draw"), "%s", out);
}

/* run --page-size refuses a param that breaks assume as run does: the
 * same message, no pointer to --help (it named one after the message). */
Test(cli, a_paged_run_refuses_a_param_as_run_does, .timeout = 60)
{
	write_text("build/attn_assume.yaml",
		   "carrier: attn_assume\ndims: {d: 8}\nparams: {scale: f32}\nassume: scale > 0\nrow:\n  q: f16[d]\n"
		   "column:\n  k: f16[d]\n  v: f16[d]\nlet:\n  s: dot(q, k) * scale\nstate:\n  m: f32\n  l: f32\n"
		   "  o: f32[d]\nidentity: {m: -inf, l: 0, o: 0}\nlift: {m: s, l: 1, o: v}\nmerge:\n  m: max(a.m, b.m)\n"
		   "  l: a.l * exp(a.m - m) + b.l * exp(b.m - m)\n  o: a.o * exp(a.m - m) + b.o * exp(b.m - m)\n"
		   "finalize: {out: o / l}\nlaws: [commutative]\n");
	char plain[4096];
	cr_assert_eq(sh(ASSOC " run build/attn_assume.yaml --device interp --param scale=-1", plain, sizeof plain, 1), 2,
		     "%s", plain);
	cr_assert_eq(sh(ASSOC " run build/attn_assume.yaml --device interp --param scale=-1 --page-size 16 --batch 2", out,
			sizeof out, 1),
		     2, "%s", out);
	cr_expect_str_eq(out, "assoc: param scale = -1 breaks 'assume' (scale > 0)\n");
	cr_expect_str_eq(out, plain);
}

/* A param drawn where assume bounds it on its own (lg <= 0): run draws it
 * within (it drew 0.58 and stopped on "param lg = 0.58 breaks 'assume'");
 * where no draw meets the bound, run and check name the param and the
 * --param to give (exit 2), not "could not draw inputs". */
Test(cli, params_are_drawn_within_assume, .timeout = 60)
{
	static const char *const fmt =
		"carrier: decay\nparams: {lg: f32}\nassume: %s\nelement: {x: f32}\nstate: {n: f32, s: f32}\n"
		"identity: {n: 0, s: 0}\nlift: {n: 1, s: x}\nmerge:\n  n: a.n + b.n\n  s: a.s * exp(b.n * lg) + b.s\n"
		"template: scan\n";
	char text[512];
	snprintf(text, sizeof text, fmt, "lg <= 0");
	write_text("build/decay_lg.yaml", text);
	cr_assert_eq(sh(ASSOC " run build/decay_lg.yaml --device interp --rows 2 --len 40", out, sizeof out, 1), 0, "%s",
		     out);
	snprintf(text, sizeof text, fmt, "lg < 0 && lg > 1");
	write_text("build/decay_lg.yaml", text);
	static const char *const cmds[] = {ASSOC " run build/decay_lg.yaml --device interp", ASSOC " check build/decay_lg.yaml"};
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(sh(cmds[k], out, sizeof out, 1), 2, "%s", out);
		cr_expect(strstr(out, "no draw of param lg satisfies 'assume' (lg < 0): give --param lg=..."), "%s", out);
		cr_expect_not(strstr(out, "could not draw"), "%s", out);
	}
}

/* A NaN param where the spec has no assume: check and run say that every
 * state folded from the inputs drawn holds NaN, at that param, not that
 * inputs where 'assume' holds could not be drawn (nor that the assume
 * holds in none of the bool param's cases). */
Test(cli, a_nan_param_is_named_not_an_assume, .timeout = 60)
{
	write_text("build/boolp.yaml", "carrier: boolp\nparams: {useabs: bool, off: i32, sc: f64}\nelement: {x: f32}\n"
				       "state: {s: f64}\nidentity: {s: 0}\nlift:\n  s: where(useabs, abs(x), x) * sc + off\n"
				       "merge: {s: a.s + b.s}\nreference:\n  s: sum(where(useabs, abs(x), x) * sc + off)\n"
				       "laws: [commutative]\n");
	const char *want = "every state folded from the inputs drawn holds NaN or an infinity, at param sc = nan";
	cr_assert_eq(sh(ASSOC " check build/boolp.yaml --param sc=nan", out, sizeof out, 1), 1, "%s", out);
	cr_expect(strstr(out, "  trials: with useabs=false, the first of 2 cases of the bool param that fails\n") &&
			  strstr(out, want), "%s", out);
	cr_expect_not(strstr(out, "assume"), "%s", out);
	/* --json: the reference and the special values compared on no row are not a verdict over none */
	cr_assert_eq(sh(ASSOC " check build/boolp.yaml --param sc=nan --json", out, sizeof out, 0), 1, "%s", out);
	cr_expect(strstr(out, "\"reference\": {\"verdict\": \"not_checked\", \"rows\": 0}") &&
			  strstr(out, "\"special_values\": {\"verdict\": \"not_checked\"") && !strstr(out, "\"matches\"") &&
			  !strstr(out, "\"agree\""),
		  "%s", out);
	cr_assert_eq(sh(ASSOC " run build/boolp.yaml --device interp --rows 2 --len 5 --param sc=nan", out, sizeof out, 1),
		     1, "%s", out);
	cr_expect(strstr(out, want) && !strstr(out, "assume"), "%s", out);
	cr_assert_eq(sh(ASSOC " run build/boolp.yaml --device interp --rows 2 --len 5 --param sc=2", out, sizeof out, 1), 0,
		     "%s", out);
}

/* --verbose on the emulator says what it has to say, and no empty line. */
Test(cli, emu_verbose_has_no_blank_line, .timeout = 60)
{
	write_text("build/segmax.yaml", "carrier: segmax\nelement: {x: f32, start: bool}\nstate: {m: f32, r: bool}\n"
					"identity: {m: -inf, r: false}\nlift: {m: x, r: start}\nmerge:\n"
					"  m: where(b.r, b.m, max(a.m, b.m))\n  r: a.r || b.r\nfinalize: {segmax: m}\n"
					"template: scan\n");
	cr_assert_eq(sh(ASSOC " run build/segmax.yaml --device emu --rows 2 --len 50 --verbose", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "emu: scan:"), "%s", out);
	cr_expect_not(strstr(out, "emu: \n"), "%s", out);
}

/* A loop spec given to check is pointed at its step. */
Test(cli, loop_spec_error_points_at_its_step)
{
	cr_assert_eq(sh(ASSOC " check specs/loops/welford_update.yaml", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "specs/loops/welford_update.yaml:6:1: error: a loop spec (a step without a merge): run "
			      "'assoc explore specs/loops/welford_update.yaml' to derive its merge\n    6 | step:"),
		  "%s", out);
}

/* An int64 file converted to a float type counts the values that the
 * conversion rounds: past 2^53 the double read is rounded already, so it
 * is the integer that is compared with the value stored. */
Test(cli, int64_past_2_53_into_floats_counts_what_rounds, .timeout = 120)
{
	write_text("build/i64f.yaml", "carrier: i64f\nelement: {x: f64}\nstate: {s: f64}\nidentity: {s: 0}\n"
				      "lift: {s: x}\nmerge: {s: a.s + b.s}\nlaws: [commutative]\n");
	int64_t v[6] = {((int64_t)1 << 53) + 1, INT64_MAX, 3, -((int64_t)1 << 53) - 1, 4, 5};
	npy_file("build/i64f.npy", "<i8", 8, v);
	cr_expect_eq(sh(ASSOC " run build/i64f.yaml --device interp --input x=build/i64f.npy", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(strstr(out, "holds int64; converted to f64, the type of input 'x' (3 of 6 values rounded)"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/online_softmax.yaml --device interp --input x=build/i64f.npy", out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "holds int64; converted to f32, the type of input 'x' (3 of 6 values rounded)"), "%s", out);
}

/* A head axis of 1 in front, (1, rows, len) as x[None] gives it, is one
 * head, as --heads 1 says: taken for element, row and column inputs. */
Test(cli, a_leading_head_axis_of_one_is_one_head, .timeout = 120)
{
	float x[20];
	for (int i = 0; i < 20; i++)
		x[i] = (float)i / 7;
	Npy a = {.descr = "<f4", .itemsize = 4, .ndim = 3, .shape = {1, 2, 10}, .count = 20, .data = x};
	char msg[300];
	cr_assert_eq(npy_write("build/head1.npy", &a, msg, sizeof msg), 0, "%s", msg);
	const char *heads[] = {"", " --heads 1"};
	for (int k = 0; k < 2; k++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " run specs/online_softmax.yaml --device interp --input x=build/head1.npy%s",
			 heads[k]);
		cr_expect_eq(sh(cmd, out, sizeof out, 1), 0, "%s: %s", cmd, out);
		cr_expect(strstr(out, "2 rows x 10"), "%s", out);
	}
	/* attention's query (1, rows, d) and keys (1, len, d) */
	a.shape[1] = 5, a.shape[2] = 4;
	cr_assert_eq(npy_write("build/head1_q.npy", &a, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(sh(ASSOC " run specs/attention.yaml -D d=4 -D dv=4 --device interp --input q=build/head1_q.npy "
			"--input k=build/head1_q.npy --input v=build/head1_q.npy",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "5 rows x 5"), "%s", out);
}

/* Option values are read one way: --param in decimal (as -D), and a
 * float param that its type would hold as 0 or infinity refused with the
 * value as written, not the one it would become. */
Test(cli, param_values_are_decimal_and_held_as_given)
{
	cr_expect_eq(sh(ASSOC " check specs/layer_norm.yaml --param eps=0x10", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--param eps=0x10: a decimal number (hexadecimal is not taken, as by -D)"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/layer_norm.yaml --device interp --param eps=-0X1p-3", out, sizeof out, 1), 2,
		     "%s", out);
	cr_expect(strstr(out, "hexadecimal is not taken"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/layer_norm.yaml --device interp --param eps=1e-46", out, sizeof out, 1), 2,
		     "%s", out);
	cr_expect(strstr(out, "--param eps=1e-46: under the smallest f32, which would hold it as 0"), "%s", out);
	cr_expect_eq(sh(ASSOC " check specs/layer_norm.yaml --param eps=1e-46", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "--param eps=1e-46: under the smallest f32"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/layer_norm.yaml --device interp --param eps=1e-45 --rows 2 --len 8", out,
			sizeof out, 1),
		     0, "f32's smallest subnormal is held: %s", out);
}

/* A named pipe as a spec or an --input is refused at once, not waited on
 * until a writer comes; standard input by its name is read. */
Test(cli, a_named_pipe_to_read_is_refused, .timeout = 60)
{
	unlink("build/in.fifo");
	cr_assert_eq(mkfifo("build/in.fifo", 0600), 0);
	cr_expect_eq(sh(ASSOC " check build/in.fifo", out, sizeof out, 1), 2, "%s", out);
	cr_expect(strstr(out, "build/in.fifo: error: cannot open: not a regular file (a named pipe; /dev/stdin reads one "
			      "given on standard input)"),
		  "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --device interp --input x=build/in.fifo", out, sizeof out, 1), 2, "%s",
		     out);
	cr_expect(strstr(out, "build/in.fifo: cannot open: not a regular file (a named pipe"), "%s", out);
	cr_expect_eq(sh(ASSOC " check /dev/stdin < specs/sum.yaml", out, sizeof out, 1), 0, "%s", out);
	unlink("build/in.fifo");
}

/* An explicit --split past the positions there are to split runs one
 * position a split on every device, said with the note --config's split
 * gives (interp and cpu took it silently, emu and gpu planned it). */
Test(cli, a_split_past_the_positions_is_clamped_with_a_note, .timeout = 600)
{
	static const char *runs[] = {"run --device interp", "run --device cpu", "bench --device cpu", "run --device emu"};
	for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, ASSOC " %s specs/sum.yaml --rows 3 --len 37 --split 65536 --threads 1", runs[i]);
		int st = sh(cmd, out, sizeof out, 1);
		if (st == 2 && strstr(runs[i], "emu") && strstr(out, "emu"))
			continue; /* no emulator here */
		cr_expect_eq(st, 0, "%s: %s", runs[i], out);
		cr_expect(strstr(out, "note: --split 65536 is more than the 37 positions to split; running split=37"), "%s: %s",
			  runs[i], out);
	}
	/* one that fits, and an empty row, are taken as they are */
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --device cpu --rows 3 --len 37 --split 37", out, sizeof out, 1), 0, "%s",
		     out);
	cr_expect(!strstr(out, "note:"), "%s", out);
	cr_expect_eq(sh(ASSOC " run specs/sum.yaml --device cpu --rows 3 --len 0 --split 5", out, sizeof out, 1), 0, "%s",
		     out);
	cr_expect(!strstr(out, "note:"), "%s", out);
}

/* A split that --config asks for past the positions there are to split
 * runs one position a split, said with a note as --config's other
 * changes are (65536 splits of 37 positions ran 14 s on emu). */
Test(cli, a_config_split_past_the_positions_is_clamped_with_a_note, .timeout = 600)
{
	int st = sh(ASSOC " run specs/sum.yaml --device emu --rows 3 --len 37 --config splitk:nt=64,split=65536", out,
		    sizeof out, 1);
	if (st == 2 && strstr(out, "emu"))
		cr_skip_test("no emulator here: %s", out);
	cr_expect_eq(st, 0, "%s", out);
	cr_expect(strstr(out, "note: --config splitk:nt=64,split=65536: split=65536 is more than the 37 positions to "
			      "split; running split=37"),
		  "%s", out);
}
