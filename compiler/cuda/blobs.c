/* blobs.c: the templates and the emulator header, built into the library
 * so that the compiler needs no files at run time.  The paths are relative
 * to the repository root, where make runs. */
#include <pthread.h>
#include <string.h>

#include "compiler/cuda/cuda.h"

#define BLOB(sym, path)                                                                                   \
	__asm__(".section .rodata\n.global " #sym "\n.type " #sym ",@object\n.balign 16\n" #sym ":\n"        \
		".incbin \"" path "\"\n.byte 0\n.global " #sym "_end\n" #sym "_end:\n.previous\n");          \
	extern const char sym[], sym##_end[];

BLOB(asc_blob_common, "templates/common.cuh")
BLOB(asc_blob_blocks, "templates/blocks.cuh")
BLOB(asc_blob_rowreduce, "templates/rowreduce.cuh")
BLOB(asc_blob_rowmap, "templates/rowmap.cuh")
BLOB(asc_blob_splitk, "templates/splitk.cuh")
BLOB(asc_blob_scan, "templates/scan.cuh")
BLOB(asc_blob_attention, "templates/attention.cuh")
BLOB(asc_blob_hopper, "templates/hopper.cuh")
BLOB(asc_blob_attention_sm90, "templates/attention_sm90.cuh")
BLOB(asc_blob_rowcluster, "templates/rowcluster.cuh")
BLOB(asc_blob_rowbulk, "templates/rowbulk.cuh")
BLOB(asc_blob_emu, "runtime/emu/emu.hpp")
BLOB(asc_blob_emu_tmap, "runtime/emu/emu_tmap.h")

enum { NBLOB = 13 };
static Blob all[NBLOB];

/* Once a process, under pthread_once: threads of the library generate
 * modules at once, and one that saw all[0] filled before the rest would
 * read names not yet written. */
static void blobs_fill(void)
{
	const char *names[] = {"common", "blocks", "rowreduce", "rowmap", "splitk", "scan", "attention", "hopper",
			       "attention_sm90", "emu", "emu_tmap", "rowcluster", "rowbulk"};
	const char *b[] = {asc_blob_common, asc_blob_blocks, asc_blob_rowreduce, asc_blob_rowmap, asc_blob_splitk,
			   asc_blob_scan, asc_blob_attention, asc_blob_hopper,
			   asc_blob_attention_sm90, asc_blob_emu, asc_blob_emu_tmap, asc_blob_rowcluster, asc_blob_rowbulk};
	const char *e[] = {asc_blob_common_end, asc_blob_blocks_end, asc_blob_rowreduce_end, asc_blob_rowmap_end,
			   asc_blob_splitk_end, asc_blob_scan_end, asc_blob_attention_end, asc_blob_hopper_end,
			   asc_blob_attention_sm90_end, asc_blob_emu_end, asc_blob_emu_tmap_end, asc_blob_rowcluster_end,
			   asc_blob_rowbulk_end};
	for (int i = 0; i < NBLOB; i++)
		all[i] = (Blob){names[i], b[i], (size_t)(e[i] - b[i]) - 1};
}

const Blob *blob_find(const char *name)
{
	static pthread_once_t filled = PTHREAD_ONCE_INIT;
	pthread_once(&filled, blobs_fill);
	for (int i = 0; i < NBLOB; i++)
		if (!strcmp(all[i].name, name))
			return &all[i];
	return NULL;
}

uint64_t blob_templates_hash(void)
{
	static const char *gpu[] = {"common", "blocks", "rowreduce", "rowmap", "splitk", "scan", "attention", "hopper",
				    "attention_sm90", "rowcluster", "rowbulk"};
	uint64_t h = CUDA_FNV0;
	for (size_t i = 0; i < sizeof gpu / sizeof *gpu; i++) {
		const Blob *b = blob_find(gpu[i]);
		h = cuda_fnv(h, b->text, b->len);
	}
	return h;
}
