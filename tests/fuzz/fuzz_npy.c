/* fuzz_npy.c: libFuzzer target for the .npy reader.  Any input must either
 * read, with its shape's product of values all there, or give a message
 * that names the file; no crash, leak or sanitizer report, and nothing
 * allocated for data the input does not hold. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compiler/devices/npy.h"

/* every value read, where the optimizer cannot drop the reads */
volatile double npy_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	Npy a;
	char msg[512] = "";
	int rc = npy_read_from(f, "fuzz.npy", &a, msg, sizeof msg);
	fclose(f);
	if (rc) {
		if (strncmp(msg, "fuzz.npy: ", 10))
			__builtin_trap();
		return 0;
	}
	/* what was read fits in the input, and every value is there */
	size_t bytes = a.count * a.itemsize, count = 1;
	for (int i = 0; i < a.ndim; i++)
		count *= a.shape[i];
	if (count != a.count || bytes > size)
		__builtin_trap();
	for (size_t i = 0; i < a.count; i++)
		npy_sink = npy_get(&a, i);
	npy_free(&a);
	return 0;
}
