/* cmd_explore.c: `assoc explore LOOP.yaml [-o CARRIER.yaml]`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cli/cli.h"
#include "compiler/explore/explore.h"

/* Write text to path (OutFile: a reader sees the old file or the whole
 * new one, never a part). */
static int write_atomic(const char *path, const char *text)
{
	OutFile of;
	int e = 0;
	if (outfile_open(&of, path, "w"))
		e = errno;
	else {
		if (fputs(text, of.f) < 0 || fflush(of.f))
			e = errno ? errno : EIO;
		if (outfile_close(&of, !e) && !e)
			e = errno;
	}
	if (e)
		cli_write_error(path, e, &of);
	return e ? -1 : 0;
}

int cmd_explore(Opts *o)
{
	const char *path = o->specs[0];
	if (o->out && strcmp(o->out, "-") && cli_output_not_input(o, "-o", o->out))
		return EXIT_USAGE;
	Carrier *c = cli_load_any(o, path);
	if (!c)
		return EXIT_USAGE;
	ExploreOpts eo;
	explore_defaults(&eo);
	eo.seed = o->check.seed;
	if (o->budget)
		eo.budget = o->budget;
	eo.params = o->params, eo.nparams = o->nparams;
	ExploreResult r;
	int rc = explore_run(c, &eo, &r);
	if (rc) { /* a --param it cannot take: no run to report */
		fprintf(stderr, "assoc: %s: %s%s", path, r.log ? r.log : "", r.log && strchr(r.log, '\n') ? "" : "\n");
		explore_result_free(&r);
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	if (r.status == EXPLORE_INVALID) { /* not a loop explore takes: no run to report */
		fputs(r.log ? r.log : "", stderr);
		explore_result_free(&r);
		spec_carrier_free(c);
		return EXIT_USAGE;
	}
	/* -o -: the carrier spec alone on standard output, the report beside it */
	FILE *log = o->out && !strcmp(o->out, "-") ? stderr : stdout;
	fprintf(log, "%s: loop %s (%s)\n", path, c->name, c->step && c->step_right ? "step and step_right" : c->step ? "step" : "step_right");
	fputs(r.log ? r.log : "", log);
	if (r.status != EXPLORE_FOUND) {
		fprintf(log, "  no carrier (%.2f s)\n", r.seconds);
		if (r.seconds >= eo.budget * 0.9) /* a slower machine gets less far in the same time */
			fprintf(log, "  the search ran out of its %g s: --budget S gives it longer\n", eo.budget);
		rc = EXIT_FAIL;
	} else {
		fprintf(log, "  carrier spec:\n");
		for (const char *l = r.yaml; *l;) {
			size_t n = strcspn(l, "\n");
			fprintf(log, "    %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
		rc = EXIT_OK;
		if (o->out && !strcmp(o->out, "-")) {
			fputs(r.yaml, stdout);
		} else if (o->out) {
			if (write_atomic(o->out, r.yaml))
				rc = EXIT_USAGE;
			else
				fprintf(log, "  wrote %s\n", o->out);
		}
		if (rc == EXIT_OK)
			fprintf(log, "  ok (%.2f s)\n", r.seconds);
		else
			fprintf(log, "  FAILED: the carrier spec could not be written\n");
	}
	explore_result_free(&r);
	spec_carrier_free(c);
	return rc;
}
