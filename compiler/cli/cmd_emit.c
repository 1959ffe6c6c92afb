/* cmd_emit.c: `assoc emit SPEC --target T [-o FILE|-]`: generated code,
 * for any target only after the laws (a carrier whose merge is not lawful
 * is refused unless --trust-merge).  Targets live with their code
 * generators and are linked in by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cli/cli.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cli/emit.h"
#include "compiler/llvm/llvm.h"
#include "compiler/prove/prove.h"

#define TARGET(name) __attribute__((weak)) extern const Target name;
TARGET(target_cuda)
TARGET(target_ptx)
TARGET(target_llvm)
TARGET(target_asm)

static const Target *const *targets(void)
{
	static const Target *all[5];
	all[0] = &target_cuda, all[1] = &target_ptx, all[2] = &target_llvm, all[3] = &target_asm, all[4] = NULL;
	return all;
}

static void target_names(char *buf, size_t n)
{
	buf[0] = 0;
	for (const Target *const *t = targets(); t < targets() + 4; t++)
		if (*t) {
			size_t l = strlen(buf);
			snprintf(buf + l, n - l, "%s%s", l ? ", " : "", (*t)->name);
		}
}

/* 0 when no law is refuted by the randomized checker or the prover, -1
 * when one is, EXIT_USAGE when the trials cannot run (a bad --param). */
static int laws_ok(Carrier *c, const Opts *o, char *msg, size_t n)
{
	CheckOpts co = o->check;
	if (co.trials <= 0 || co.trials > 2000)
		co.trials = 2000;
	co.id_trials = co.id_trials > 0 && co.id_trials < 200 ? co.id_trials : 200;
	CheckResult r;
	char why[512] = "", cases[320];
	if (check_run_cases(c, &co, &r, cases, sizeof cases, why, sizeof why)) {
		snprintf(msg, n, "%s", why);
		return EXIT_USAGE;
	}
	int bad = 0;
	for (int i = 0; i < r.nlaw && !bad; i++)
		if (r.law[i].v == VERDICT_FAILS) {
			snprintf(msg, n, "%s: the merge is not %s (%s%s%s)", c->file, r.law[i].law,
				 r.law[i].detail ? r.law[i].detail : "a counterexample was found", *cases ? "; trials " : "",
				 cases);
			bad = 1;
		}
	check_result_free(&r);
	ProofReport pr;
	if (!bad && prove_carrier_at(c, o->check.params, o->check.nparams, 0, &pr) == 0) {
		for (int i = 0; i < pr.n && !bad; i++)
			if (pr.line[i].status == PROOF_DISPROVED) {
				snprintf(msg, n, "%s: %s is disproved (%s)", c->file, pr.line[i].law,
					 pr.line[i].how ? pr.line[i].how : "");
				bad = 1;
			}
		prove_report_free(&pr);
	}
	return bad ? -1 : 0;
}

/* 0 to emit, else the exit status with its message in msg. */
static int lawful(Carrier *c, const Opts *o, char *msg, size_t n)
{
	char why[1024];
	int rc = laws_ok(c, o, why, sizeof why);
	if (!rc)
		return 0;
	if (rc == EXIT_USAGE) { /* not a law that failed: --trust-merge does not cover it */
		snprintf(msg, n, "%s", why);
		return rc;
	}
	if (o->trust_merge) {
		fprintf(stderr, "assoc: warning: %s; emitting anyway (--trust-merge)\n", why);
		return 0;
	}
	snprintf(msg, n, "%s; refusing to generate code (--trust-merge to emit it anyway)", why);
	return EXIT_FAIL;
}

/* Output goes to a temporary file renamed into place, so a failure leaves
 * no partial file behind. */
int cmd_emit(Opts *o)
{
	const Target *tg = NULL;
	char names[128];
	target_names(names, sizeof names);
	for (const Target *const *t = targets(); t < targets() + 4; t++)
		if (*t && o->target && !strcmp((*t)->name, o->target))
			tg = *t;
	if (!o->target)
		return usage_error("emit needs --target (%s)", names[0] ? names : "none in this build");
	if (!tg)
		return usage_error("unknown target '%s' (targets: %s)", o->target, names[0] ? names : "none in this build");
	/* the GPU targets' options (cuda_target.c): the other targets would ignore them */
	if (o->arch && strcmp(o->target, "ptx"))
		return usage_error("--arch is an option of emit --target ptx only");
	int gpu = !strcmp(o->target, "cuda") || !strcmp(o->target, "ptx");
	if (!gpu && (o->stats || o->explain))
		return usage_error("%s is an option of emit --target cuda and ptx only", o->stats ? "--stats" : "--explain");
	if (o->out && strcmp(o->out, "-") && cli_output_not_input(o, "-o", o->out))
		return EXIT_USAGE;
	char bad[512];
	/* the CPU's variants for llvm and asm; checked before the laws' minutes */
	LlvmOpts lo;
	if (o->run.config && (gpu ? cuda_config_ok(o->run.config, bad, sizeof bad)
				  : cpu_parse_config(o->run.config, &lo, bad, sizeof bad)))
		return usage_error("--config: %s", bad);
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	int to_stdout = !o->out || !strcmp(o->out, "-");
	OutFile of;
	FILE *f = stdout;
	if (!to_stdout) {
		if (outfile_open(&of, o->out, "w")) {
			perror(o->out);
			spec_carrier_free(c);
			return EXIT_FAIL;
		}
		f = of.f;
	}
	char msg[4096] = "";
	int rc = lawful(c, o, msg, sizeof msg);
	if (!rc)
		rc = tg->emit(c, o, f, msg, sizeof msg);
	if (rc && msg[0])
		fprintf(stderr, "assoc: %s\n", msg);
	if (!to_stdout && outfile_close(&of, !rc) && !rc) {
		perror(o->out);
		rc = EXIT_FAIL;
	}
	spec_carrier_free(c);
	return rc;
}
