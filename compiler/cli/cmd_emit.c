/* cmd_emit.c: `assoc emit SPEC --target T [-o FILE|-]`: generated code,
 * for any target only after the carrier's verdict (a carrier whose laws or
 * reference fail is refused unless --trust-merge).  Targets live with their code
 * generators and are linked in by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cli/cli.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/cli/emit.h"
#include "compiler/llvm/llvm.h"

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

/* 0 to emit, else the exit status with its message in msg. */
static int lawful(Carrier *c, const Opts *o, char *msg, size_t n)
{
	/* at most 2000 trials: a lawful merge is emitted in a second */
	VerdictOpts vo = {.check = o->check, .prove = 1};
	if (vo.check.trials <= 0 || vo.check.trials > 2000)
		vo.check.trials = 2000;
	vo.check.id_trials = vo.check.id_trials > 0 && vo.check.id_trials < 200 ? vo.check.id_trials : 200;
	vo.check.special_rows = 0; /* a warning that check reports, not a reason to refuse code */
	return cli_verdict(c, o, &vo, "emitting", "generate code", msg, n);
}

/* Output goes to a temporary file renamed into place, so a failure leaves
 * no partial file behind. */
int cmd_emit(Opts *o)
{
	const Target *tg = NULL;
	char names[128];
	target_names(names, sizeof names);
	/* both are about the GPU's kernels; asked alone, they are all that is printed */
	int only_about = !o->target && !o->out && (o->stats || o->explain);
	if (!o->target && (o->stats || o->explain))
		o->target = o->stats ? "ptx" : "cuda"; /* ptxas's figures need the PTX */
	for (const Target *const *t = targets(); t < targets() + 4; t++)
		if (*t && o->target && !strcmp((*t)->name, o->target))
			tg = *t;
	if (!o->target)
		return usage_error("emit needs --target (%s)", names[0] ? names : "none in this build");
	if (!tg)
		return usage_error("unknown target '%s' (targets: %s)", o->target, names[0] ? names : "none in this build");
	/* the GPU targets' options (cuda_target.c): the other targets would ignore them */
	if (o->arch && strcmp(o->target, "ptx") && strcmp(o->target, "cuda"))
		return usage_error("--arch is an option of emit --target cuda and ptx only");
	int gpu = !strcmp(o->target, "cuda") || !strcmp(o->target, "ptx");
	if (!gpu && (o->stats || o->explain))
		return usage_error("%s is an option of emit --target cuda and ptx only", o->stats ? "--stats" : "--explain");
	if (!gpu && o->header)
		return usage_error("--header is an option of emit --target cuda and ptx only");
	if (o->out && strcmp(o->out, "-") && cli_output_not_input(o, "-o", o->out))
		return EXIT_USAGE;
	if (o->header && (cli_output_not_input(o, "--header", o->header) ||
			  (o->out && cli_same_file(o->out, o->header) &&
			   usage_error("-o %s and --header %s name the same file", o->out, o->header))))
		return EXIT_USAGE;
	char bad[512];
	/* the CPU's variants for llvm and asm; checked before the laws' minutes */
	LlvmOpts lo;
	if (o->run.config && (gpu ? cuda_config_ok(o->run.config, bad, sizeof bad)
				  : cpu_parse_config(o->run.config, &lo, bad, sizeof bad)))
		return usage_error("--config: %s", bad);
	if (!strcmp(o->target, "ptx")) /* its load beside the spec's and the module's making */
		nvrtc_preload();
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	int to_stdout = !o->out || !strcmp(o->out, "-");
	OutFile of;
	FILE *f = stdout;
	if (only_about && !(f = fopen("/dev/null", "w"))) {
		fprintf(stderr, "assoc: /dev/null: cannot write: %s\n", strerror(errno));
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	if (!to_stdout) {
		if (outfile_open(&of, o->out, "w")) {
			cli_write_error(o->out, errno, &of);
			spec_carrier_free(c);
			return EXIT_USAGE;
		}
		f = of.f;
	}
	char msg[4096] = "";
	void *early = tg->start ? tg->start(c, o) : NULL;
	int rc = lawful(c, o, msg, sizeof msg);
	if (!rc)
		rc = tg->emit(c, o, early, f, msg, sizeof msg);
	else if (early)
		tg->drop(early);
	if (rc && msg[0])
		fprintf(stderr, "assoc: %s\n", msg);
	if (only_about)
		fclose(f);
	if (!to_stdout && outfile_close(&of, !rc) && !rc) {
		cli_write_error(o->out, errno, NULL);
		rc = EXIT_USAGE;
	}
	spec_carrier_free(c);
	return rc;
}
