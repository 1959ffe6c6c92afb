/* npy.c: reading and writing NumPy .npy files. */
#include "compiler/devices/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/devices/run.h"

enum { NPY_MAX_HEADER = 1 << 16, NPY_MAX_BYTES = 1 << 30 };

static const struct {
	const char *descr;
	size_t size;
} kinds[] = {{"<f4", 4}, {"<f8", 8}, {"<f2", 2}, {"<i4", 4}, {"<i8", 8}, {"|b1", 1}, {"<u2", 2}};

const char *npy_descr(TyKind k)
{
	switch (k) {
	case TY_F32: return "<f4";
	case TY_F64: return "<f8";
	case TY_F16: return "<f2";
	case TY_BF16: return "<u2";
	case TY_I32: return "<i4";
	case TY_I64: return "<i8";
	default: return "|b1";
	}
}

void npy_free(Npy *a)
{
	free(a->data);
	a->data = NULL;
}

double npy_get(const Npy *a, size_t i)
{
	const char *p = (const char *)a->data + i * a->itemsize;
	if (!strcmp(a->descr, "<f4")) {
		float f;
		memcpy(&f, p, 4);
		return f;
	}
	if (!strcmp(a->descr, "<f8")) {
		double f;
		memcpy(&f, p, 8);
		return f;
	}
	if (!strcmp(a->descr, "<i4")) {
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	if (!strcmp(a->descr, "<i8")) {
		int64_t v;
		memcpy(&v, p, 8);
		return (double)v;
	}
	uint16_t h;
	if (!strcmp(a->descr, "|b1"))
		return *(const uint8_t *)p != 0;
	memcpy(&h, p, 2);
	return !strcmp(a->descr, "<f2") ? run_f16_value(h) : run_bf16_value(h);
}

/* The value of 'key' in the header dict, NULL when absent. */
static const char *field(const char *hdr, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "'%s'", key);
	const char *p = strstr(hdr, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ' || *p == ':')
		p++;
	return p;
}

static int parse_header(const char *hdr, Npy *a, char *msg, size_t n)
{
	const char *d = field(hdr, "descr"), *f = field(hdr, "fortran_order"), *s = field(hdr, "shape");
	if (!d || !f || !s || *d != '\'' || *s != '(') {
		snprintf(msg, n, "malformed header (needs descr, fortran_order and shape)");
		return -1;
	}
	size_t dl = strcspn(d + 1, "'");
	if (dl >= sizeof a->descr) {
		snprintf(msg, n, "unsupported dtype");
		return -1;
	}
	memcpy(a->descr, d + 1, dl);
	a->descr[dl] = 0;
	a->itemsize = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
		if (!strcmp(a->descr, kinds[k].descr))
			a->itemsize = kinds[k].size;
	if (!a->itemsize) {
		snprintf(msg, n, "unsupported dtype '%s' (float32, float64, float16, int32, int64, bool, uint16 bf16 bits)",
			 a->descr);
		return -1;
	}
	if (strncmp(f, "False", 5)) {
		snprintf(msg, n, "Fortran-ordered arrays are not supported; save with np.ascontiguousarray");
		return -1;
	}
	a->ndim = 0;
	a->count = 1;
	for (const char *p = s + 1; *p != ')';) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			break;
		if (!isdigit((unsigned char)*p) || a->ndim == NPY_MAX_DIMS) {
			snprintf(msg, n, "malformed shape");
			return -1;
		}
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || v > NPY_MAX_BYTES) {
			snprintf(msg, n, "array too large");
			return -1;
		}
		a->shape[a->ndim++] = (size_t)v;
		a->count *= (size_t)v;
		if (a->count > NPY_MAX_BYTES) {
			snprintf(msg, n, "array too large");
			return -1;
		}
		for (p = end; *p == ' ';)
			p++;
		if (*p != ',' && *p != ')') { /* "(2 5)" is no tuple */
			snprintf(msg, n, "malformed shape");
			return -1;
		}
	}
	size_t hl = strlen(hdr);
	while (hl && (hdr[hl - 1] == ' ' || hdr[hl - 1] == '\n'))
		hl--;
	if (hdr[0] != '{' || !hl || hdr[hl - 1] != '}') {
		snprintf(msg, n, "malformed header (not a dict in braces)");
		return -1;
	}
	return 0;
}

int npy_read(const char *path, Npy *a, char *msg, size_t n)
{
	memset(a, 0, sizeof *a);
	char why[200] = "";
	FILE *f = fopen(path, "rb");
	unsigned char pre[12];
	char *hdr = NULL;
	if (!f) {
		snprintf(msg, n, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	size_t got = fread(pre, 1, 10, f);
	if (got < 10 && ferror(f)) { /* a folder opens, and reads as EISDIR */
		snprintf(why, sizeof why, "cannot read: %s", strerror(errno));
		goto fail;
	}
	if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) {
		snprintf(why, sizeof why, "not a .npy file");
		goto fail;
	}
	size_t hlen = pre[8] | (size_t)pre[9] << 8, off = 10;
	if (pre[6] >= 2) {
		if (fread(pre + 10, 1, 2, f) != 2) {
			snprintf(why, sizeof why, "truncated header");
			goto fail;
		}
		hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
		off = 12;
	}
	if (pre[6] < 1 || pre[6] > 3 || hlen > NPY_MAX_HEADER) {
		snprintf(why, sizeof why, "unsupported .npy version %d or header length", pre[6]);
		goto fail;
	}
	hdr = calloc(hlen + 1, 1);
	if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
		snprintf(why, sizeof why, "truncated header");
		goto fail;
	}
	if (parse_header(hdr, a, why, sizeof why))
		goto fail;
	size_t bytes = a->count * a->itemsize;
	a->data = malloc(bytes ? bytes : 1);
	if (!a->data)
		abort();
	if (fread(a->data, 1, bytes, f) != bytes || fgetc(f) != EOF) {
		snprintf(why, sizeof why, "data is %s than the header's shape says", feof(f) ? "shorter" : "longer");
		goto fail;
	}
	(void)off;
	free(hdr);
	fclose(f);
	return 0;
fail:
	snprintf(msg, n, "%s: %s", path, why);
	free(hdr);
	npy_free(a);
	fclose(f);
	return -1;
}

int npy_write_to(FILE *f, const Npy *a)
{
	char shape[256] = "", hdr[512];
	for (int i = 0; i < a->ndim; i++) {
		size_t l = strlen(shape);
		snprintf(shape + l, sizeof shape - l, "%zu,%s", a->shape[i], i + 1 < a->ndim ? " " : "");
	}
	int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", a->descr,
			  shape);
	int total = 10 + hl + 1, pad = (64 - total % 64) % 64;
	memset(hdr + hl, ' ', pad);
	hdr[hl + pad] = '\n';
	hl += pad + 1;
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff),
				 (unsigned char)(hl >> 8)};
	size_t bytes = a->count * a->itemsize;
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, hl, f) == (size_t)hl &&
		 (bytes == 0 || fwrite(a->data, 1, bytes, f) == bytes);
	return ok && !fflush(f) ? 0 : -1;
}

int npy_write(const char *path, const Npy *a, char *msg, size_t n)
{
	OutFile of;
	int e = 0;
	if (outfile_open(&of, path, "wb"))
		e = errno;
	else {
		if (npy_write_to(of.f, a))
			e = errno ? errno : EIO;
		if (outfile_close(&of, !e) && !e)
			e = errno;
	}
	if (e)
		snprintf(msg, n, "%s: cannot write: %s", path, strerror(e));
	return e ? -1 : 0;
}
