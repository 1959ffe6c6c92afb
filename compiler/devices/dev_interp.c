/* dev_interp.c: the IR interpreter as a device: each row folded left to
 * right in the spec's types (float32).  Slow; the baseline every other
 * device is compared with, and the way to run a spec no backend supports. */
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/run.h"

static int interp_available(char *why, size_t n)
{
	(void)why, (void)n;
	return 1;
}

static void store(Buffer *b, int n, const int *off, const double *v, size_t at)
{
	for (int o = 0; o < n; o++)
		for (int t = 0; t < b[o].width; t++)
			run_buffer_set(&b[o], at * b[o].width + t, v[off[o] + t]);
}

static int interp_run(RunData *d, const RunOpts *o, char *msg, size_t n)
{
	runcheck_round_p(d, 0, 0, 0, 0); /* P stays float32 here, whatever ran on d before */
	if (d->heads > 1) { /* each query head on its own, with its key/value head */
		for (int h = 0; h < d->heads; h++) {
			RunData *v = rundata_head_view(d, h);
			int rc = interp_run(v, o, msg, n);
			rundata_view_free(v);
			if (rc)
				return rc;
		}
		return 0;
	}
	Carrier *c = d->c;
	Machine m;
	eval_init(&m, c);
	memcpy(m.params, d->params, c->nparams * sizeof *d->params);
	Row *row = eval_row_new(&m, d->len);
	double *s = calloc(6 * m.sw + m.finw + m.mapw + 2, sizeof *s);
	if (!s)
		abort();
	double *se = s + m.sw, *l = se + m.sw, *t = l + m.sw, *out = t + 3 * m.sw;
	rundata_load_cols(d, &m, row);
	for (int r = 0; r < d->rows; r++) {
		rundata_load_row(d, &m, r, row);
		eval_identity(&m, MODE_F32, s, se);
		for (int j = 0; j < d->len; j++) {
			if (!eval_masked(&m, row, j)) {
				eval_lift(&m, MODE_F32, row, j, l, t);
				memcpy(t, s, m.sw * sizeof *s);
				eval_merge(&m, MODE_F32, t, se, l, se, s, t + m.sw);
			}
			if (d->scan) {
				eval_finalize(&m, MODE_F32, row, s, se, out, NULL);
				store(d->fin, c->nfinal, m.finoff, out, (size_t)r * d->len + j);
			}
		}
		if (d->scan)
			continue;
		eval_finalize(&m, MODE_F32, row, s, se, out, NULL);
		store(d->fin, c->nfinal, m.finoff, out, r);
		for (int j = 0; j < d->len && c->nmap; j++) {
			eval_map(&m, MODE_F32, row, j, s, se, out, NULL);
			store(d->map, c->nmap, m.mapoff, out, (size_t)r * d->len + j);
		}
	}
	free(s);
	eval_row_free(row);
	eval_free(&m);
	(void)o, (void)msg, (void)n;
	return 0;
}

const Device dev_interp = {"interp", interp_available, interp_run, NULL, 1, NULL};
