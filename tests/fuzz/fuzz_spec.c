/* fuzz_spec.c: libFuzzer target for the spec loader.  Any input must either
 * load or give a diagnostic; no crash, hang, leak or sanitizer report. */
#include <stddef.h>
#include <stdint.h>

#include "compiler/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Diag d;
	diag_init(&d, "fuzz.yaml");
	Carrier *c = spec_load_buffer("fuzz.yaml", (const char *)data, size, NULL, 0, &d);
	/* a failed load must say why; a successful one must not have errors */
	if (!c != (d.nerrors > 0) || (!c && !d.text))
		__builtin_trap();
	carrier_free(c);
	diag_free(&d);
	return 0;
}
