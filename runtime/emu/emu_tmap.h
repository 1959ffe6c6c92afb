/* emu_tmap.h: the emulator's tensor maps, in the 128 opaque bytes of a
 * CUtensorMap (templates/hopper.cuh: AscTmap).
 *
 * Plain C, included by host code that builds the maps and, as a blob
 * prepended to runtime/emu/emu.hpp, by emulated kernels that read them.
 * emu_tmap_encode refuses what cuTensorMapEncodeTiled refuses for a tiled
 * map without interleave (the map 64-byte aligned among it), so that a
 * map the emulator accepts is one the driver accepts too.  Element strides are 1 and elements outside the
 * tensor load as zeros (the driver's defaults). */
#ifndef ASSOC_EMU_TMAP_H
#define ASSOC_EMU_TMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { EMU_TMAP_BYTES = 128, EMU_TMAP_MAXRANK = 5, EMU_TMAP_MAGIC = 0x70616d74 /* "tmap" */ };

typedef struct EmuTmap {
	unsigned magic;
	int elem_bytes, rank, swizzle; /* swizzle: 0, 32, 64 or 128 bytes */
	unsigned long long base;       /* the tensor's global address */
	unsigned long long dims[EMU_TMAP_MAXRANK];
	unsigned long long strides[EMU_TMAP_MAXRANK - 1]; /* bytes between consecutive indices of dims 1.. */
	unsigned box[EMU_TMAP_MAXRANK];
} EmuTmap;

typedef char emu_tmap_fits[sizeof(EmuTmap) <= EMU_TMAP_BYTES ? 1 : -1];

/* Write a map of a rank-dimensional tensor at base (dims[0] innermost;
 * strides: rank - 1 byte strides of dims 1..) whose loads copy boxes of
 * box[0] x ... elements, each 16-byte chunk of shared memory placed by
 * the swizzle, into out (128 bytes, 64-byte aligned).  0, or -1 with the
 * reason in msg. */
static inline int emu_tmap_encode(void *out, int elem_bytes, int rank, const void *base, const unsigned long long *dims,
				  const unsigned long long *strides, const unsigned *box, int swizzle, char *msg, size_t n)
{
	EmuTmap m;
	memset(&m, 0, sizeof m);
	if ((uintptr_t)out % 64) {
		snprintf(msg, n, "tensor map: its address %p is not 64-byte aligned", out);
		return -1;
	}
	if (rank < 1 || rank > EMU_TMAP_MAXRANK) {
		snprintf(msg, n, "tensor map: rank %d outside [1, %d]", rank, EMU_TMAP_MAXRANK);
		return -1;
	}
	if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8) {
		snprintf(msg, n, "tensor map: elements of %d bytes (1, 2, 4 or 8)", elem_bytes);
		return -1;
	}
	if (!base || (uintptr_t)base % 16) {
		snprintf(msg, n, "tensor map: base address %p is not 16-byte aligned", base);
		return -1;
	}
	if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128) {
		snprintf(msg, n, "tensor map: swizzle of %d bytes (0, 32, 64 or 128)", swizzle);
		return -1;
	}
	for (int d = 0; d < rank; d++) {
		if (dims[d] < 1 || dims[d] > (1ull << 32)) {
			snprintf(msg, n, "tensor map: dimension %d of %llu elements outside [1, 2^32]", d, dims[d]);
			return -1;
		}
		if (box[d] < 1 || box[d] > 256) {
			snprintf(msg, n, "tensor map: box dimension %d of %u elements outside [1, 256]", d, box[d]);
			return -1;
		}
		if (d > 0 && (strides[d - 1] % 16 || strides[d - 1] >= (1ull << 40))) {
			snprintf(msg, n, "tensor map: stride of dimension %d (%llu bytes) is not a multiple of 16 below 2^40",
				 d, strides[d - 1]);
			return -1;
		}
	}
	unsigned inner = box[0] * (unsigned)elem_bytes;
	if (inner % 16) {
		snprintf(msg, n, "tensor map: the box's inner dimension is %u bytes, not a multiple of 16", inner);
		return -1;
	}
	if (swizzle && inner > (unsigned)swizzle) {
		snprintf(msg, n, "tensor map: the box's inner dimension (%u bytes) exceeds the %d-byte swizzle span", inner,
			 swizzle);
		return -1;
	}
	m.magic = EMU_TMAP_MAGIC;
	m.elem_bytes = elem_bytes, m.rank = rank, m.swizzle = swizzle;
	m.base = (unsigned long long)(uintptr_t)base;
	for (int d = 0; d < rank; d++) {
		m.dims[d] = dims[d];
		m.box[d] = box[d];
		if (d > 0)
			m.strides[d - 1] = strides[d - 1];
	}
	memset(out, 0, EMU_TMAP_BYTES);
	memcpy(out, &m, sizeof m);
	return 0;
}

/* Bytes a load of the map copies (the whole box, out-of-bounds zeros included). */
static inline unsigned long long emu_tmap_box_bytes(const EmuTmap *m)
{
	unsigned long long b = (unsigned long long)m->elem_bytes;
	for (int d = 0; d < m->rank; d++)
		b *= m->box[d];
	return b;
}

#endif
