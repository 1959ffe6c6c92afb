/* npy.h: NumPy .npy arrays (format versions 1.0 to 3.0, little-endian,
 * C order), so inputs and outputs can be compared in Python. */
#ifndef ASSOC_NPY_H
#define ASSOC_NPY_H

#include <stddef.h>
#include <stdio.h>

#include "ir/ir.h"

enum { NPY_MAX_DIMS = 8 };

typedef struct {
	char descr[8];  /* "<f4", "<f2", "<f8", "<i4", "<i8", "|b1", "<u2" (bf16 bits), "|u1" (f8e4m3 bits) */
	int ndim;
	size_t shape[NPY_MAX_DIMS];
	size_t count;   /* product of shape */
	size_t itemsize;
	void *data;
} Npy;

/* Read a whole file; -1 with a message naming the file on any problem.
 * Nothing is allocated for more data than the file holds. */
int npy_read(const char *path, Npy *a, char *msg, size_t n);
/* npy_read of f, open and at its start, which messages call path. */
int npy_read_from(FILE *f, const char *path, Npy *a, char *msg, size_t n);
/* Write atomically (a temporary file renamed into place): no partial file. */
int npy_write(const char *path, const Npy *a, char *msg, size_t n);
/* The file npy_write would make, written to f and flushed: 0, or -1
 * with errno. */
int npy_write_to(FILE *f, const Npy *a);
void npy_free(Npy *a);
/* Value i as a double; descr must be one npy_read accepts. */
double npy_get(const Npy *a, size_t i);
/* The descr for an array holding values of kind k (bf16 as "<u2" bits,
 * f8e4m3 as "|u1": NumPy has neither type). */
const char *npy_descr(TyKind k);

#endif
