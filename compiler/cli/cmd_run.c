/* cmd_run.c: `assoc run SPEC`: arrays through a device, checked against
 * the float64 reference, after the carrier's verdict (a carrier whose laws
 * or reference fail is refused unless --trust-merge). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/cli/cli.h"
#include "compiler/cli/run_mpi.h"
#include "compiler/devices/npy.h"

typedef enum { SHAPE_ROWS, SHAPE_LEN, SHAPE_ROWS_LEN } Layout;

typedef struct {
	const char *name;
	Buffer *buf;
	Layout layout;
} Slot;

/* Every array a run reads or writes, by name (*n of them; free the result). */
static Slot *slots(const RunData *d, int *n)
{
	Carrier *c = d->c;
	Slot *s = calloc((size_t)c->nrow + c->ncol + c->nelem + c->nfinal + c->nmap + 1, sizeof *s);
	if (!s)
		abort();
	*n = 0;
	for (int k = 0; k < c->nrow; k++)
		s[(*n)++] = (Slot){c->row[k].name, &d->row[k], SHAPE_ROWS};
	for (int k = 0; k < c->ncol; k++)
		s[(*n)++] = (Slot){c->col[k].name, &d->col[k], SHAPE_LEN};
	for (int k = 0; k < c->nelem; k++)
		s[(*n)++] = (Slot){c->elem[k].name, &d->elem[k], SHAPE_ROWS_LEN};
	for (int k = 0; k < c->nfinal; k++)
		s[(*n)++] = (Slot){c->finalize[k].name, &d->fin[k], d->scan ? SHAPE_ROWS_LEN : SHAPE_ROWS};
	for (int k = 0; k < c->nmap; k++)
		s[(*n)++] = (Slot){c->map[k].name, &d->map[k], SHAPE_ROWS_LEN};
	return s;
}

static int slot_named(const Slot *s, int n, const char *name)
{
	int k = 0;
	while (k < n && strcmp(s[k].name, name))
		k++;
	return k < n ? k : -1;
}

static int is_input(const Carrier *c, const char *name)
{
	for (int k = 0; k < c->nrow; k++)
		if (!strcmp(c->row[k].name, name))
			return 1;
	for (int k = 0; k < c->ncol; k++)
		if (!strcmp(c->col[k].name, name))
			return 1;
	for (int k = 0; k < c->nelem; k++)
		if (!strcmp(c->elem[k].name, name))
			return 1;
	return 0;
}

/* With heads, every array has a leading head axis: query heads for row,
 * element and output arrays, key/value heads for column arrays (the order
 * of RunData's buffers, head after head). */
static int layout_dims(Layout l, const RunData *d, int width, size_t *shape)
{
	int n = 0, rows = d->rows, len = d->len;
	if (d->heads > 1)
		shape[n++] = l == SHAPE_LEN ? d->kv_heads : d->heads;
	if (l != SHAPE_LEN)
		shape[n++] = rows;
	if (l != SHAPE_ROWS)
		shape[n++] = len;
	if (width > 1)
		shape[n++] = width;
	return n;
}

/* A shape as Python prints a tuple: (2, 3), (3,), (). */
static void shape_text(const size_t *dims, int nd, char *b, size_t n)
{
	snprintf(b, n, "(");
	for (int t = 0; t < nd; t++)
		snprintf(b + strlen(b), n - strlen(b), "%s%zu", t ? ", " : "", dims[t]);
	snprintf(b + strlen(b), n - strlen(b), "%s", nd == 1 ? ",)" : ")");
}

/* The axis an input file sets (rows or positions) must agree with --rows
 * or --len where given, and with the input files before it. */
static int axis_agrees(const Opts *o, int i, const char *axis, size_t got, int given, const char *by, int by_input)
{
	if (given < 0)
		return EXIT_OK;
	if ((size_t)given == got)
		return EXIT_OK;
	if (by_input >= 0)
		return usage_error("--input %s=%s: %zu %s, but --input %s=%s has %d", o->inputs[i].name, o->inputs[i].path,
				   got, axis, o->inputs[by_input].name, o->inputs[by_input].path, given);
	return usage_error("--input %s=%s: %zu %s, but %s %d", o->inputs[i].name, o->inputs[i].path, got, axis, by, given);
}

/* What the axes of an input are: its layout, and its components a
 * position (the trailing axis where more than one). */
static int input_layout(const Carrier *c, const char *name, Layout *l, int *width)
{
	const Decl *g[] = {c->row, c->col, c->elem};
	const int ng[] = {c->nrow, c->ncol, c->nelem};
	const Layout ly[] = {SHAPE_ROWS, SHAPE_LEN, SHAPE_ROWS_LEN};
	for (int k = 0; k < 3; k++)
		for (int f = 0; f < ng[k]; f++)
			if (!strcmp(g[k][f].name, name)) {
				*l = ly[k], *width = spec_decl_width(&g[k][f]);
				return 1;
			}
	return 0;
}

/* The axes of an input without its head axis. */
static int layout_rank(Layout l, int width) { return (l == SHAPE_ROWS_LEN ? 2 : 1) + (width > 1); }

/* "[heads][rows][len][4]": the axes an input takes (head: with the head axis). */
static void axes_text(Layout l, int width, int head, char *b, size_t n)
{
	snprintf(b, n, "%s%s", head ? (l == SHAPE_LEN ? "[kv_heads]" : "[heads]") : "",
		 l == SHAPE_ROWS ? "[rows]" : l == SHAPE_LEN ? "[len]" : "[rows][len]");
	if (width > 1)
		snprintf(b + strlen(b), n - strlen(b), "[%d]", width);
}

/* --heads and --kv-heads, where not given, from the leading axis of the
 * inputs that have one more axis than their rows and positions (as
 * --output writes them with heads): query heads from row and element
 * inputs, key/value heads from column inputs, the same in every file. */
static int heads_from_inputs(Opts *o, const Carrier *c, const Npy *arr)
{
	int by[2] = {-1, -1}, given[2] = {o->heads > 0, o->kv_heads > 0};
	size_t got[2] = {0, 0};
	static const char *const what[2] = {"heads", "key/value heads"};
	for (int i = 0; i < o->ninputs; i++) {
		Layout l;
		int w;
		input_layout(c, o->inputs[i].name, &l, &w);
		int k = l == SHAPE_LEN;
		if (given[k] || arr[i].ndim != layout_rank(l, w) + 1)
			continue;
		size_t h = arr[i].shape[0];
		if (h < 1 || h > 1 << 16)
			return usage_error("--input %s=%s: %zu %s on its leading axis: 1 to %d", o->inputs[i].name,
					   o->inputs[i].path, h, what[k], 1 << 16);
		if (by[k] >= 0 && got[k] != h)
			return usage_error("--input %s=%s: %zu %s on its leading axis, but --input %s=%s has %zu",
					   o->inputs[i].name, o->inputs[i].path, h, what[k], o->inputs[by[k]].name,
					   o->inputs[by[k]].path, got[k]);
		if (by[k] < 0)
			got[k] = h, by[k] = i;
	}
	if (by[0] >= 0)
		o->heads = (int)got[0];
	if (by[1] >= 0)
		o->kv_heads = (int)got[1];
	if (by[1] >= 0 && o->heads <= 0) /* key/value heads alone: a query head each */
		o->heads = o->kv_heads;
	int heads = o->heads > 0 ? o->heads : 1, kv = o->kv_heads > 0 ? o->kv_heads : heads;
	if ((by[0] >= 0 || by[1] >= 0) && (kv > heads || heads % kv)) {
		char h[300], g[300];
		if (by[0] >= 0)
			snprintf(h, sizeof h, "--input %s=%s", o->inputs[by[0]].name, o->inputs[by[0]].path);
		else
			snprintf(h, sizeof h, "--heads");
		if (by[1] >= 0)
			snprintf(g, sizeof g, "--input %s=%s", o->inputs[by[1]].name, o->inputs[by[1]].path);
		else
			snprintf(g, sizeof g, "--kv-heads");
		return usage_error("%d heads (%s) are not a multiple of %d key/value heads (%s)", heads, h, kv, g);
	}
	return EXIT_OK;
}

/* An input of one component a position written with a trailing axis of 1
 * (a row input's (rows, 1), as the layout's [rows][w] reads with w = 1)
 * has the rank of one with a head axis: where another input shows the
 * files have none (its rank is its layout's), and no --heads says they
 * do, that axis is dropped rather than its rows taken for heads. */
static void squeeze_unit_axes(const Opts *o, const Carrier *c, Npy *arr)
{
	int headless = 0;
	for (int i = 0; i < o->ninputs; i++) {
		Layout l;
		int w;
		input_layout(c, o->inputs[i].name, &l, &w);
		headless |= arr[i].ndim == layout_rank(l, w);
	}
	if (!headless || o->heads > 1 || o->kv_heads > 1)
		return;
	for (int i = 0; i < o->ninputs; i++) {
		Layout l;
		int w;
		input_layout(c, o->inputs[i].name, &l, &w);
		if (w == 1 && arr[i].ndim == layout_rank(l, w) + 1 && arr[i].shape[arr[i].ndim - 1] == 1)
			arr[i].ndim--;
	}
}

int cli_inputs_read(Opts *o, Carrier *c, Npy *arr)
{
	int rows_by = -1, len_by = -1; /* the input that set each axis; -1: --rows, --len or none */
	int rows_set = o->rows_given ? o->rows : -1, len_set = o->len_given ? o->len : -1;
	int heads_given = o->heads > 0 || o->kv_heads > 0;
	for (int i = 0; i < o->ninputs; i++) {
		char msg[512];
		if (!is_input(c, o->inputs[i].name))
			return usage_error("--input %s: the spec has no input named '%s'", o->inputs[i].name,
					   o->inputs[i].name);
		if (npy_read(o->inputs[i].path, &arr[i], msg, sizeof msg))
			return input_error("%s", msg);
	}
	squeeze_unit_axes(o, c, arr);
	if (heads_from_inputs(o, c, arr))
		return EXIT_USAGE;
	int h = o->heads > 1; /* the head axis comes first */
	for (int i = 0; i < o->ninputs; i++) {
		Layout l;
		int w;
		input_layout(c, o->inputs[i].name, &l, &w);
		int elem = l == SHAPE_ROWS_LEN, col = l == SHAPE_LEN;
		/* one head with its axis, (1, rows, len) as x[None] or a batch of
		 * one head gives it: the file's layout without the axis */
		if (!h && arr[i].ndim == layout_rank(l, w) + 1 && arr[i].shape[0] == 1) {
			memmove(arr[i].shape, arr[i].shape + 1, (size_t)(arr[i].ndim - 1) * sizeof *arr[i].shape);
			arr[i].ndim--;
		}
		/* one key/value head: a column input's (len, w) is (1, len, w)
		 * without its leading 1, as a 2-D q is one query head */
		int hi = col && o->kv_heads == 1 && arr[i].ndim == layout_rank(l, w) ? 0 : h;
		if (arr[i].ndim != hi + layout_rank(l, w)) {
			char has[160], axes[80], more[160] = "", sets[80];
			shape_text(arr[i].shape, arr[i].ndim, has, sizeof has);
			axes_text(l, w, h, axes, sizeof axes);
			if (!h && !heads_given) { /* a head axis first would set --heads */
				char headed[80];
				axes_text(l, w, 1, headed, sizeof headed);
				snprintf(more, sizeof more, " or %s", headed);
			} else if (h && col) { /* one key/value head may leave its axis out */
				char one[80];
				axes_text(l, w, 0, one, sizeof one);
				snprintf(more, sizeof more, ", or %s with --kv-heads 1", one);
			}
			const char *head_opt = h || !heads_given ? (col ? "--kv-heads" : "--heads") : NULL;
			if (elem)
				snprintf(sets, sizeof sets, "%s%s--rows and --len", head_opt ? head_opt : "",
					 head_opt ? ", " : "");
			else
				snprintf(sets, sizeof sets, "%s%s%s", head_opt ? head_opt : "", head_opt ? " and " : "",
					 col ? "--len" : "--rows");
			return input_error("%s: shape %s does not fit input '%s', %s input: it takes %s%s (the shape sets %s "
					   "where they are not given)",
					   o->inputs[i].path, has, o->inputs[i].name,
					   elem ? "an element" : col ? "a column" : "a row", axes, more, sets);
		}
		size_t rows = o->rows, len = o->len;
		if (elem)
			rows = arr[i].shape[h], len = arr[i].shape[h + 1];
		else if (col)
			len = arr[i].shape[hi];
		else
			rows = arr[i].shape[h];
		if (rows > MAX_ROWS || len > MAX_LEN)
			return input_error("%s: %zu rows x %zu positions for input '%s': at most %d rows and %d positions",
					   o->inputs[i].path, rows, len, o->inputs[i].name, MAX_ROWS, MAX_LEN);
		int sets_rows = !col, sets_len = elem || col;
		if ((sets_rows && axis_agrees(o, i, "rows", rows, rows_set, "--rows", rows_by)) ||
		    (sets_len && axis_agrees(o, i, "positions", len, len_set, "--len", len_by)))
			return EXIT_USAGE;
		if (sets_rows && rows_set < 0)
			rows_set = (int)rows, rows_by = i;
		if (sets_len && len_set < 0)
			len_set = (int)len, len_by = i;
		o->rows = (int)rows, o->len = (int)len;
	}
	return EXIT_OK;
}

void cli_inputs_free(Npy *arr)
{
	for (int i = 0; i < MAX_FILES; i++)
		npy_free(&arr[i]);
}

/* Whether a's uint16 or uint8 values are the bit patterns of an input of
 * kind's own 16- or 8-bit float (NumPy has neither bfloat16 nor an 8-bit
 * float), not unsigned integers: a uint8 label for an i32 input is the
 * number it holds. */
static int float_bits(const Npy *a, TyKind kind)
{
	if (!strcmp(a->descr, "<u2"))
		return kind == TY_BF16 || kind == TY_F16;
	return !strcmp(a->descr, "|u1") && kind == TY_F8E4M3;
}

double cli_npy_value(const Npy *a, size_t x, TyKind kind)
{
	const unsigned char *p = (const unsigned char *)a->data + x * a->itemsize;
	if (!strcmp(a->descr, "|u1") && !float_bits(a, kind))
		return p[0];
	if (!strcmp(a->descr, "<u2") && !float_bits(a, kind)) {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	return npy_get(a, x);
}

/* Whether int64 value x of a is r exactly: past 2^53 the double that
 * npy_get reads is rounded already, so it is the integer that is
 * compared with the value stored. */
static int i64_stored(const Npy *a, size_t x, double r)
{
	int64_t v;
	memcpy(&v, (const char *)a->data + x * a->itemsize, sizeof v);
	return r >= -0x1p63 && r < 0x1p63 && (int64_t)r == v;
}

/* A .npy dtype as NumPy names it, for an input of kind. */
static const char *dtype_name(const Npy *a, TyKind kind)
{
	static const char *const names[][2] = {{"<f4", "float32"}, {"<f8", "float64"}, {"<f2", "float16"},
					       {"<i4", "int32"},   {"<i8", "int64"},   {"|b1", "bool"},
					       {"<u2", "uint16"},  {"|u1", "uint8"}};
	if (float_bits(a, kind))
		return !strcmp(a->descr, "|u1") ? "uint8 (float8_e4m3fn bits)" : "uint16 (bfloat16 bits)";
	for (size_t k = 0; k < sizeof names / sizeof *names; k++)
		if (!strcmp(a->descr, names[k][0]))
			return names[k][1];
	return a->descr;
}

/* a's values into buf, input name's array (its shape checked): the
 * input's own bit patterns (and an int64 file for an i64 input) copied as
 * they are, other dtypes converted with a note on standard error, a value
 * the conversion would lose refused with its index. */
int cli_npy_into(const char *path, const char *name, const Npy *a, Buffer *buf)
{
	TyKind kind = buf->kind;
	/* uint16 holds bfloat16's bits (NumPy has no bfloat16), and an f16
	 * input's own bits, as the Python package reads them; uint8 an
	 * f8e4m3's.  As they are: a NaN's sign and payload too, which a
	 * double would make the type's one NaN, and an int64 over 2^53, which
	 * it would round */
	int own = !strcmp(a->descr, npy_descr(kind)) || (kind == TY_F16 && !strcmp(a->descr, "<u2"));
	if (own && (kind == TY_F16 || kind == TY_BF16 || kind == TY_F8E4M3 || kind == TY_I64)) {
		memcpy(buf->p, a->data, a->count * run_kind_size(kind));
		return EXIT_OK;
	}
	int integer = kind == TY_I32 || kind == TY_I64 || kind == TY_BOOL, i64 = !strcmp(a->descr, "<i8");
	size_t rounded = 0;
	for (size_t x = 0; x < a->count; x++) {
		double v = cli_npy_value(a, x, kind), r = ir_round(kind, v);
		if (!ir_holds(kind, v)) /* a float file's 2.5 or NaN is refused, not cut */
			return input_error("%s: the value %.17g at flat index %zu is not a%s %s, the type of input '%s'%s", path,
					   v, x, kind == TY_I32 || kind == TY_I64 ? "n" : "", ty_kind_name(kind), name,
					   strcmp(a->descr, npy_descr(kind)) ? ": converting would lose it" : "");
		if (!integer && run_past_range(kind, v))
			return input_error("%s: the value %.17g at flat index %zu is past the range of %s, the type of "
					   "input '%s': converting would lose it",
					   path, v, x, ty_kind_name(kind), name);
		rounded += (r != v && !isnan(v)) || (i64 && !integer && !i64_stored(a, x, r));
		run_buffer_set(buf, x, v);
	}
	if (strcmp(a->descr, npy_descr(kind))) {
		char how[96];
		if (integer)
			snprintf(how, sizeof how, "every value fits");
		else
			snprintf(how, sizeof how, "%zu of %zu values rounded", rounded, a->count);
		fprintf(stderr, "assoc: note: %s holds %s; converted to %s, the type of input '%s' (%s)\n", path,
			dtype_name(a, kind), ty_kind_name(kind), name, how);
	}
	return EXIT_OK;
}

int cli_inputs_load(const Opts *o, RunData *d, const Npy *arr)
{
	int n, rc = EXIT_OK;
	Slot *s = slots(d, &n);
	for (int i = 0; i < o->ninputs && !rc; i++) {
		int k = slot_named(s, n, o->inputs[i].name);
		if (k >= 0) {
			size_t want[4];
			int nd = layout_dims(s[k].layout, d, s[k].buf->width, want);
			int same = arr[i].ndim == nd;
			for (int t = 0; same && t < nd; t++)
				same = arr[i].shape[t] == want[t];
			/* one key/value head without its axis (cli_inputs_read) */
			if (!same && s[k].layout == SHAPE_LEN && nd > 1 && want[0] == 1 && arr[i].ndim == nd - 1) {
				same = 1;
				for (int t = 1; same && t < nd; t++)
					same = arr[i].shape[t - 1] == want[t];
			}
			if (!same) {
				char shape[160], has[160];
				shape_text(want, nd, shape, sizeof shape);
				shape_text(arr[i].shape, arr[i].ndim, has, sizeof has);
				/* only the axes the input has: a row input's positions do not matter */
				char axes[80];
				Layout ly = s[k].layout;
				if (ly == SHAPE_ROWS)
					snprintf(axes, sizeof axes, "%d rows", d->rows);
				else if (ly == SHAPE_LEN)
					snprintf(axes, sizeof axes, "%d positions", d->len);
				else
					snprintf(axes, sizeof axes, "%d rows x %d positions", d->rows, d->len);
				rc = input_error("%s: shape %s does not fit input '%s' of %s%s: expected %s", o->inputs[i].path,
						 has, s[k].name, axes,
						 d->heads > 1 ? (ly == SHAPE_LEN ? ", per key/value head" : ", per head") : "",
						 shape);
				break;
			}
			rc = cli_npy_into(o->inputs[i].path, s[k].name, &arr[i], s[k].buf);
		}
	}
	free(s);
	/* drawn inputs hold assume by construction; given ones may not, and
	 * the proofs and the checks said nothing of such data */
	char msg[1024];
	if (!rc && o->ninputs && rundata_check_assume(d, msg, sizeof msg))
		rc = input_error("--input: %s", msg);
	return rc;
}

/* Before the run: every --output names an array, and its file can be
 * created and can replace what is at its path (not a folder), and no two
 * outputs share a path, so that a run is not wasted on a typo or a
 * missing folder, and writing them all (write_outputs) does not fail
 * half way. */
static int outputs_ok(const Opts *o, const RunData *d)
{
	int n, rc = EXIT_OK;
	Slot *s = slots(d, &n);
	for (int i = 0; i < o->noutputs && !rc; i++) {
		char why[PATH_MAX + 96];
		struct stat st;
		int twice = -1;
		for (int k = 0; k < i; k++)
			if (cli_same_file(o->outputs[k].path, o->outputs[i].path))
				twice = k;
		if (slot_named(s, n, o->outputs[i].name) < 0) {
			rc = usage_error("--output %s: the spec has no array named '%s'", o->outputs[i].name,
					 o->outputs[i].name);
		} else if (cli_output_not_input(o, "--output", o->outputs[i].path)) {
			rc = EXIT_USAGE;
		} else if (twice >= 0) {
			rc = usage_error("--output %s=%s: %s is also --output %s's file", o->outputs[i].name,
					 o->outputs[i].path, o->outputs[i].path, o->outputs[twice].name);
		} else if (!stat(o->outputs[i].path, &st) && S_ISDIR(st.st_mode)) {
			fprintf(stderr, "assoc: %s: cannot write: %s\n", o->outputs[i].path, strerror(EISDIR));
			rc = EXIT_USAGE;
		} else if (outfile_check(o->outputs[i].path, why, sizeof why)) {
			fprintf(stderr, "assoc: %s: cannot write: %s\n", o->outputs[i].path, why);
			rc = EXIT_USAGE;
		}
	}
	free(s);
	return rc;
}

/* Every --output, or none: each is written beside its path first, and
 * only when all are there do they replace the files at their paths (a
 * failure before that leaves those files as they were; outputs to
 * devices are written as they go). */
static int write_outputs(Opts *o, RunData *d)
{
	int n, rc = EXIT_OK, made = 0;
	Slot *s = slots(d, &n);
	OutFile *of = calloc(o->noutputs ? o->noutputs : 1, sizeof *of);
	if (!of)
		abort();
	for (; made < o->noutputs; made++) {
		int k = slot_named(s, n, o->outputs[made].name);
		Npy a = {.itemsize = run_kind_size(s[k].buf->kind), .data = s[k].buf->p};
		snprintf(a.descr, sizeof a.descr, "%s", npy_descr(s[k].buf->kind));
		a.ndim = layout_dims(s[k].layout, d, s[k].buf->width, a.shape);
		a.count = s[k].buf->n * s[k].buf->width;
		if (outfile_open(&of[made], o->outputs[made].path, "wb") || npy_write_to(of[made].f, &a)) {
			cli_write_error(o->outputs[made].path, errno, &of[made]);
			if (of[made].f)
				outfile_close(&of[made], 0);
			rc = EXIT_USAGE;
			break;
		}
	}
	for (int i = 0; i < made; i++) {
		if (outfile_close(&of[i], !rc) && !rc) {
			fprintf(stderr, "assoc: %s: cannot write: %s", o->outputs[i].path, strerror(errno));
			if (i)
				fprintf(stderr, " (the %d outputs before it are written)", i);
			fprintf(stderr, "\n");
			rc = EXIT_USAGE;
		}
	}
	free(of);
	free(s);
	return rc;
}

static const Device *pick_device(const char *name)
{
	if (strcmp(name, "auto"))
		return run_device_find(name);
	static const char *order[] = {"gpu", "cpu", "emu", "interp"};
	char why[256];
	for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
		const Device *dv = run_device_find(order[i]);
		if (!dv)
			continue;
		if (dv->available(why, sizeof why))
			return dv;
		fprintf(stderr, "assoc: %s device not usable (%s)\n", order[i], why);
	}
	fprintf(stderr, "assoc: running on the interpreter (no GPU or CPU backend in this build)\n");
	return run_device_find("interp");
}

/* With --mpi: a device that folds slices, and the split in time. */
static int mpi_device_ok(const Opts *o, const Device *dv)
{
	if (o->run.split)
		return usage_error("--split: with --mpi each rank folds one slice of every row (--deterministic: %d slices)",
				   RUN_MPI_SLICES);
	if (o->mpi_collective && strcmp(o->mpi_collective, "gather") && strcmp(o->mpi_collective, "reduce"))
		return usage_error("--mpi-collective: gather or reduce, not '%s'", o->mpi_collective);
	if (o->mpi_collective && !strcmp(o->mpi_collective, "reduce") && o->run.deterministic)
		return usage_error("--mpi-collective reduce sums in the collective's own order, which is not the same "
				   "bits for every number of ranks: not with --deterministic");
	if (o->mpi_collective && !strcmp(o->mpi_collective, "reduce") && strcmp(dv->name, "gpu") && strcmp(dv->name, "emu"))
		return usage_error("--mpi-collective reduce: on the gpu and emu devices, not %s", dv->name);
	if (strcmp(dv->name, "cpu") && strcmp(dv->name, "interp") && strcmp(dv->name, "gpu") && strcmp(dv->name, "emu"))
		return usage_error("--mpi runs on the cpu, interp, gpu and emu devices, not %s", dv->name);
	return EXIT_OK;
}

static void print_mpi(const RunMpiTimes *t)
{
	printf("  mpi: %d rank%s, %d slice%s a row%s, ", t->ranks, t->ranks > 1 ? "s" : "", t->slices,
	       t->slices > 1 ? "s" : "", t->slices != t->ranks ? " (deterministic)" : "");
	if (t->how[0])
		printf("%s", t->how);
	else
		printf("%s op", t->commutative ? "commutative" : "rank-ordered");
	printf(": local fold %.3f s, communication %.3f s, merge %.3f s\n", t->fold, t->comm, t->merge);
}

/* The line under the outputs: an ok that compared nothing, or nothing by
 * size, says so. */
static const char *check_verdict(const RunCheck *rc)
{
	if (!rc->ok)
		return "FAILED";
	if (!runcheck_any_compared(rc))
		return "ok (no positions to compare)";
	return runcheck_any_sized(rc) ? "ok" : "ok (no value compared by size)";
}

void cli_print_check(const RunCheck *rc)
{
	for (int o = 0; o < rc->nout; o++) {
		const OutCheck *x = &rc->out[o];
		const char *basis = x->basis ? x->basis : "the float64 reference";
		if (!x->compared) { /* a scan over rows of length 0: errors of 0 would read as a match */
			printf("  %s: no positions to compare\n", x->name);
			continue;
		}
		if (runcheck_sized(x) || x->nan_mismatch)
			printf("  %s: max abs error %.3g, max relative %.3g, %.3g of tolerance (against %s)", x->name,
			       x->max_abs, x->max_rel, x->worst_ratio, basis);
		else /* errors of 0 would read as a match */
			printf("  %s: no value compared by size (against %s)", x->name, basis);
		char notes[256];
		runcheck_notes(x, notes, sizeof notes);
		if (x->nan_mismatch)
			printf(", %d NaN or infinity where the reference differs", x->nan_mismatch);
		printf("%s", notes);
		if (x->nan_mismatch)
			printf(" (the first at flat index %zu) FAILS", x->at);
		else if (x->worst_ratio > 1)
			printf(" (worst at flat index %zu) FAILS", x->at);
		printf("\n");
	}
	printf("  %s\n", check_verdict(rc));
}

int cli_run_verdict(Carrier *c, const Opts *o) { return cli_run_verdict_as(c, o, "running", "run it"); }

int cli_run_verdict_as(Carrier *c, const Opts *o, const char *doing, const char *refused)
{
	VerdictOpts vo = verdict_run_opts(&o->check);
	char msg[1024] = "";
	cli_busy("%s: checking the laws", c->file);
	int rc = cli_verdict(c, o, &vo, doing, refused, msg, sizeof msg);
	cli_busy_done();
	if (rc && msg[0])
		fprintf(stderr, "assoc: %s\n", msg);
	return rc;
}

int cli_run_step(Carrier *c, const Opts *o, const Device *dv, const char *what, CliRunStep step, void *ctx,
		 double *sec)
{
	char msg[1024] = "";
	if (!dv->available(msg, sizeof msg)) {
		fprintf(stderr, "assoc: device %s is not usable here: %s\n", dv->name, msg);
		return EXIT_UNABLE;
	}
	int rc = cli_run_verdict(c, o);
	if (rc)
		return rc;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*sec = -1;
	cli_busy("%s", what);
	int failed = step(ctx, sec, msg, sizeof msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_busy_done();
	if (*sec < 0)
		*sec = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	if (failed) {
		fprintf(stderr, "assoc: %s: %s\n", dv->name, msg);
		return EXIT_UNABLE; /* it did not run: what it ran is checked after */
	}
	return EXIT_OK;
}

/* run's step: d through dv, or through the ranks with --mpi. */
typedef struct {
	RunData *d;
	const Device *dv;
	Opts *o;
	RunMpiTimes mt;
} RunStep;

static int run_step(void *ctx, double *sec, char *msg, size_t n)
{
	RunStep *r = ctx;
	int reduce = r->o->mpi_collective && !strcmp(r->o->mpi_collective, "reduce");
	(void)sec;
	return r->o->mpi ? run_mpi_run(r->d, r->dv, &r->o->run, reduce, &r->mt, msg, n)
			 : r->dv->run(r->d, &r->o->run, msg, n);
}

static int cmd_run_on(Opts *o);

int cmd_run(Opts *o)
{
	char msg[1024] = "";
	if (o->mpi && run_mpi_init(msg, sizeof msg)) {
		fprintf(stderr, "assoc: %s\n", msg);
		return EXIT_USAGE;
	}
	int rc = cmd_run_on(o);
	if (o->mpi)
		run_mpi_end();
	return rc;
}

/* The run; with --mpi, collective: every rank reaches each agreement
 * (run_mpi_agree) with the same verdict, rank 0 alone checks, prints and
 * writes the outputs. */
static int cmd_run_on(Opts *o)
{
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	if (o->page_size) {
		const Device *pdv = pick_device(o->device);
		int prc = pdv ? cmd_paged_run(o, c, pdv)
			      : usage_error("unknown device '%s' (devices: %s, auto)", o->device, run_device_names());
		spec_carrier_free(c);
		return prc;
	}
	Npy arr[MAX_FILES] = {0};
	RunData *d = NULL;
	int rc = cli_inputs_read(o, c, arr);
	const Device *dv = rc ? NULL : pick_device(o->device);
	if (!rc && !dv)
		rc = usage_error("unknown device '%s' (devices: %s, auto)", o->device, run_device_names());
	if (!rc && o->mpi)
		rc = mpi_device_ok(o, dv);
	if (!rc && !o->mpi && o->mpi_collective)
		rc = usage_error("--mpi-collective: with --mpi");
	char msg[1024] = "";
	/* before anything is drawn or judged at a size no thread could hold */
	if (!rc && (!strcmp(dv->name, "emu") || !strcmp(dv->name, "gpu")) && run_thread_fits(c, msg, sizeof msg)) {
		fprintf(stderr, "%s: error: %s: %s\n", c->file, dv->name, msg);
		rc = EXIT_UNABLE;
	}
	int lead = !o->mpi || run_mpi_rank() == 0;
	if (!rc && !(d = cli_drawn(o, c)))
		rc = EXIT_USAGE;
	if (!rc)
		rc = cli_inputs_load(o, d, arr);
	if (!rc && lead)
		rc = outputs_ok(o, d);
	if (o->mpi)
		rc = run_mpi_agree(rc);
	if (!rc && o->run.config && !dv->config)
		rc = usage_error("--config: the %s device takes no configuration", dv->name);
	if (!rc && o->run.config && dv->config(o->run.config, msg, sizeof msg))
		rc = usage_error("--config: %s", msg);
	if (!rc)
		cli_split_fit(o, d->len);
	RunStep step = {.d = d, .dv = dv, .o = o};
	double sec = 0;
	if (!rc) {
		char what[512];
		snprintf(what, sizeof what, "%s: running on %s (%d rows x %d)", c->file, dv->name, d->rows, d->len);
		rc = cli_run_step(c, o, dv, what, run_step, &step, &sec);
		if (!rc && lead) {
			RunCheck chk;
			char heads[64];
			cli_heads_clause(heads, sizeof heads, d->heads, d->kv_heads);
			char as[32] = ""; /* the emulator's target, where one is named */
			if (o->arch)
				snprintf(as, sizeof as, " (%s)", o->arch);
			const char *on = o->mpi && step.mt.on ? step.mt.on : dv->name; /* --mpi: the cpu in its place */
			if (strcmp(on, dv->name))
				as[0] = 0;
			printf("%s: carrier %s on %s%s, %d rows x %d%s (%.3f s)\n", c->file, c->name, on, as, d->rows,
			       d->len, heads, sec);
			if (o->mpi)
				print_mpi(&step.mt);
			fflush(stdout);
			cli_busy("%s: comparing with the float64 reference", c->file);
			runcheck_run(d, &chk);
			cli_busy_done();
			cli_print_check(&chk);
			rc = chk.ok ? EXIT_OK : EXIT_FAIL;
			runcheck_free(&chk);
			int w = write_outputs(o, d);
			rc = w > rc ? w : rc;
		}
	}
	if (o->mpi)
		rc = run_mpi_agree(rc);
	cli_inputs_free(arr);
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}
