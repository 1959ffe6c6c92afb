/* fuzz_cache.c: libFuzzer target for the cache readers.  Any bytes planted
 * as a sealed artifact (PTX, the emulator's library, the CPU backend's
 * object) or as a tuning entry must either read back exactly what a
 * writer sealed or be a miss: no crash, leak or sanitizer report.  A
 * sealed read that succeeds returns the input less its seal, and only
 * when the seal is that of the key and those bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/cache.h"
#include "runtime/tune.h"

enum { KEY = 0x5eed };

static char dir[64];

static void plant(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size)
		__builtin_trap();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "build/fuzz-cache.XXXXXX"); /* from the repository root, as make fuzz runs it */
		if (!mkdtemp(dir))
			__builtin_trap();
	}
	char path[128];
	snprintf(path, sizeof path, "%s/artifact", dir);
	plant(path, data, size);
	size_t len = 0;
	char *got = cache_read_sealed(path, KEY, &len);
	if (got) {
		if (size < CACHE_SEAL_LEN || len != size - CACHE_SEAL_LEN || memcmp(got, data, len) ||
		    !cache_sealed(data, size, KEY))
			__builtin_trap();
		free(got);
	} else if (cache_sealed(data, size, KEY)) {
		__builtin_trap(); /* a sealed file refused */
	}
	/* what a writer seals reads back */
	if (cache_write_sealed(path, KEY, data, size) == 0) {
		got = cache_read_sealed(path, KEY, &len);
		if (!got || len != size || memcmp(got, data, size))
			__builtin_trap();
		free(got);
		if ((got = cache_read_sealed(path, KEY + 1, &len)))
			__builtin_trap(); /* another key's */
	}
	TuneCache tc;
	char err[256], value[256], why[256];
	if (tc_open(&tc, dir, err, sizeof err))
		__builtin_trap();
	tc_path(&tc, "shape", path, sizeof path);
	plant(path, data, size);
	if (tc_get(&tc, "shape", value, sizeof value, why, sizeof why) && strlen(value) >= sizeof value)
		__builtin_trap();
	return 0;
}
