/* dev_interp.c: the IR interpreter as a device: each row folded left to
 * right in the spec's types (float32; integers exact, an i64 past 2^53
 * with its rest beside the double).  Slow; the baseline every other
 * device is compared with, and the way to run a spec no backend supports. */
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/run.h"

static int interp_available(char *why, size_t n)
{
	(void)why, (void)n;
	return 1;
}

static void store(Buffer *b, int n, const int *off, const double *v, const double *rest, size_t at)
{
	for (int o = 0; o < n; o++)
		for (int t = 0; t < b[o].width; t++)
			run_buffer_set_exact(&b[o], at * b[o].width + t, v[off[o] + t], rest[off[o] + t]);
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
	/* state, its bounds and rests (ir_int_exact: i64 exact past 2^53), the
	 * lift's (eval_step_exact), the outputs and their rests */
	int sw = m.sw, ow = m.finw > m.mapw ? m.finw : m.mapw;
	double *s = calloc(6 * (size_t)sw + 2 * (size_t)ow + 2, sizeof *s);
	if (!s)
		abort();
	double *se = s + sw, *sr = se + sw, *l = sr + sw, *out = l + 3 * sw, *outr = out + ow;
	rundata_load_cols(d, &m, row);
	for (int r = 0; r < d->rows; r++) {
		rundata_load_row(d, &m, r, row);
		eval_identity(&m, MODE_F32, s, se);
		memset(sr, 0, sw * sizeof *sr);
		for (int j = 0; j < d->len; j++) {
			eval_step_exact(&m, MODE_F32, row, j, s, se, sr, l);
			if (d->scan) {
				eval_finalize_exact(&m, MODE_F32, row, s, se, sr, out, NULL, outr);
				store(d->fin, c->nfinal, m.finoff, out, outr, (size_t)r * d->len + j);
			}
		}
		if (d->scan)
			continue;
		eval_finalize_exact(&m, MODE_F32, row, s, se, sr, out, NULL, outr);
		store(d->fin, c->nfinal, m.finoff, out, outr, r);
		for (int j = 0; j < d->len && c->nmap; j++) {
			eval_map_exact(&m, MODE_F32, row, j, s, se, sr, out, NULL, outr);
			store(d->map, c->nmap, m.mapoff, out, outr, (size_t)r * d->len + j);
		}
	}
	free(s);
	eval_row_free(row);
	eval_free(&m);
	(void)o, (void)msg, (void)n;
	return 0;
}

const Device dev_interp = {"interp", interp_available, interp_run, NULL, 1, NULL};
