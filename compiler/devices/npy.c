/* npy.c: reading and writing NumPy .npy files. */
#include "compiler/devices/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/util/cache.h"
#include "compiler/devices/run.h"

enum { NPY_MAX_HEADER = 1 << 16, NPY_MAX_BYTES = 1 << 30 };

static const struct {
	const char *descr;
	size_t size;
} kinds[] = {{"<f4", 4}, {"<f8", 8}, {"<f2", 2}, {"<i4", 4}, {"<i8", 8}, {"|b1", 1}, {"<u2", 2}, {"|u1", 1}};

const char *npy_descr(TyKind k)
{
	switch (k) {
	case TY_F32: return "<f4";
	case TY_F64: return "<f8";
	case TY_F16: return "<f2";
	case TY_BF16: return "<u2";
	case TY_F8E4M3: return "|u1";
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
	if (!strcmp(a->descr, "|u1"))
		return run_f8e4m3_value(*(const uint8_t *)p);
	memcpy(&h, p, 2);
	return !strcmp(a->descr, "<f2") ? run_f16_value(h) : run_bf16_value(h);
}

/* The header is a Python dict literal with exactly the keys descr,
 * fortran_order and shape, as NumPy writes it and reads it back: each key
 * once, fortran_order the word True or False, shape a tuple of
 * integers. */
static const char *blank(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* A quoted string at p (either quote) into out; past it, or NULL. */
static const char *quoted(const char *p, char *out, size_t n)
{
	char q = *p;
	if (q != '\'' && q != '"')
		return NULL;
	const char *e = strchr(p + 1, q);
	if (!e || (size_t)(e - p - 1) >= n || memchr(p + 1, '\\', (size_t)(e - p - 1)))
		return NULL;
	memcpy(out, p + 1, (size_t)(e - p - 1));
	out[e - p - 1] = 0;
	return e + 1;
}

static int word_end(char c) { return !isalnum((unsigned char)c) && c != '_'; }

/* A tuple of integers at p into a; past it, or NULL with msg. */
static const char *shape(const char *p, Npy *a, char *msg, size_t n)
{
	a->ndim = 0;
	a->count = 1;
	int commas = 0;
	for (p = blank(p + 1); *p != ')';) {
		if (!isdigit((unsigned char)*p) || a->ndim == NPY_MAX_DIMS)
			goto bad;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || v > NPY_MAX_BYTES || (a->count *= (size_t)v) > NPY_MAX_BYTES) {
			snprintf(msg, n, "array too large");
			return NULL;
		}
		a->shape[a->ndim++] = (size_t)v;
		p = blank(end);
		if (*p == ',')
			commas++, p = blank(p + 1);
		else if (*p != ')') /* "(2 5)" is no tuple */
			goto bad;
	}
	/* "(4)" is the number 4 to Python, "(4,)" the tuple */
	if (a->ndim == 1 && !commas)
		goto bad;
	return p + 1;
bad:
	snprintf(msg, n, "malformed shape");
	return NULL;
}

static int parse_header(const char *hdr, Npy *a, char *msg, size_t n)
{
	int have[3] = {0, 0, 0}, fortran = 0;
	const char *p = blank(hdr);
	if (*p != '{') {
		snprintf(msg, n, "malformed header (not a dict in braces)");
		return -1;
	}
	for (p = blank(p + 1); *p != '}';) {
		char key[32];
		if (!(p = quoted(p, key, sizeof key)) || *(p = blank(p)) != ':') {
			snprintf(msg, n, "malformed header (not a dict in braces)");
			return -1;
		}
		p = blank(p + 1);
		int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
		if (k < 0) {
			snprintf(msg, n, "malformed header (a key '%s' besides descr, fortran_order and shape)", key);
			return -1;
		}
		if (have[k]++) {
			snprintf(msg, n, "malformed header ('%s' given twice)", key);
			return -1;
		}
		if (k == 0 && !(p = quoted(p, a->descr, sizeof a->descr))) {
			snprintf(msg, n, "unsupported dtype (descr is not one short string)");
			return -1;
		}
		if (k == 1) {
			if (!strncmp(p, "True", 4) && word_end(p[4]))
				fortran = 1, p += 4;
			else if (!strncmp(p, "False", 5) && word_end(p[5]))
				p += 5;
			else {
				snprintf(msg, n, "malformed header (fortran_order is neither True nor False)");
				return -1;
			}
		}
		if (k == 2 && *p != '(') {
			snprintf(msg, n, "malformed shape");
			return -1;
		}
		if (k == 2 && !(p = shape(p, a, msg, n)))
			return -1;
		p = blank(p);
		if (*p == ',')
			p = blank(p + 1);
		else if (*p != '}') {
			snprintf(msg, n, "malformed header (not a dict in braces)");
			return -1;
		}
	}
	if (*blank(p + 1)) {
		snprintf(msg, n, "malformed header (not a dict in braces)");
		return -1;
	}
	if (!have[0] || !have[1] || !have[2]) {
		snprintf(msg, n, "malformed header (needs descr, fortran_order and shape)");
		return -1;
	}
	a->itemsize = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
		if (!strcmp(a->descr, kinds[k].descr))
			a->itemsize = kinds[k].size;
	if (!a->itemsize) {
		snprintf(msg, n, "unsupported dtype '%s' (float32, float64, float16, int32, int64, bool, uint16 bf16 bits, "
			 "uint8 f8e4m3 bits)",
			 a->descr);
		return -1;
	}
	if (fortran) {
		snprintf(msg, n, "Fortran-ordered arrays are not supported; save with np.ascontiguousarray");
		return -1;
	}
	return 0;
}

/* The data of a file whose size is not known (a pipe): read in pieces,
 * so that what is allocated follows what arrives, not what the header
 * claims. */
static int read_stream(FILE *f, Npy *a, size_t bytes)
{
	size_t cap = bytes < 1 << 20 ? bytes : 1 << 20, got = 0;
	a->data = malloc(cap ? cap : 1);
	if (!a->data)
		abort();
	while (got < bytes) {
		if (got == cap) {
			cap = cap > bytes / 2 ? bytes : cap * 2;
			void *t = realloc(a->data, cap);
			if (!t)
				abort();
			a->data = t;
		}
		size_t r = fread((char *)a->data + got, 1, cap - got, f);
		if (!r)
			return -1;
		got += r;
	}
	return 0;
}

int npy_read_from(FILE *f, const char *path, Npy *a, char *msg, size_t n)
{
	memset(a, 0, sizeof *a);
	char why[200] = "";
	unsigned char pre[12];
	char *hdr = NULL;
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
	if (strlen(hdr) != hlen) {
		snprintf(why, sizeof why, "malformed header (a NUL byte in it)");
		goto fail;
	}
	if (parse_header(hdr, a, why, sizeof why))
		goto fail;
	size_t bytes = a->count * a->itemsize;
	struct stat st;
	int fd = fileno(f);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode)) {
		/* the file's size says whether the data is all there, before
		 * anything is allocated for it */
		unsigned long long have = (unsigned long long)st.st_size - (off + hlen);
		if ((unsigned long long)st.st_size < off + hlen || have != bytes) {
			snprintf(why, sizeof why, "data is %s than the header's shape says (%llu bytes, not %zu)",
				 (unsigned long long)st.st_size < off + hlen || have < bytes ? "shorter" : "longer",
				 (unsigned long long)st.st_size < off + hlen ? 0 : have, bytes);
			goto fail;
		}
	}
	if (read_stream(f, a, bytes) || fgetc(f) != EOF) {
		snprintf(why, sizeof why, "data is %s than the header's shape says", feof(f) ? "shorter" : "longer");
		goto fail;
	}
	free(hdr);
	return 0;
fail:
	snprintf(msg, n, "%s: %s", path, why);
	free(hdr);
	npy_free(a);
	return -1;
}

int npy_read(const char *path, Npy *a, char *msg, size_t n)
{
	memset(a, 0, sizeof *a);
	char why[128];
	FILE *f = infile_open(path, why, sizeof why);
	if (!f) {
		snprintf(msg, n, "%s: cannot open: %s", path, why[0] ? why : strerror(errno));
		return -1;
	}
	int rc = npy_read_from(f, path, a, msg, n);
	fclose(f);
	return rc;
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
		snprintf(msg, n, "%s: cannot write: %s", path, outfile_why(&of, e));
	return e ? -1 : 0;
}
