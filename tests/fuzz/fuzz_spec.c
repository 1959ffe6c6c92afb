/* fuzz_spec.c: libFuzzer target for the spec loader.  Any input must either
 * load or give a diagnostic; no crash, hang, leak or sanitizer report.  The
 * diagnostic must also keep its form: "fuzz.yaml:L:C: error: ..." with L:C
 * a place in the input, and no control character in the text. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compiler/front/spec.h"

static void check_form(const Diag *d, const uint8_t *data, size_t size)
{
	static const char head[] = "fuzz.yaml:";
	if (strncmp(d->text, head, sizeof head - 1))
		__builtin_trap();
	for (const unsigned char *p = (const unsigned char *)d->text; *p; p++)
		if (*p < 0x20 && *p != '\n')
			__builtin_trap();
	int line, col;
	if (sscanf(d->text + sizeof head - 1, "%d:%d: error: ", &line, &col) != 2)
		return; /* a diagnostic about the whole file */
	/* the line exists and the column is on it, or just past its end */
	size_t i = size >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
	for (int l = 1; l < line && i < size; i++)
		l += data[i] == '\n';
	if (line < 1 || col < 1 || (i >= size && line > 1))
		__builtin_trap();
	int cols = 0;
	for (; i < size && data[i] != '\n' && data[i] != '\r'; i++)
		cols += (data[i] & 0xc0) != 0x80;
	if (col > cols + 1)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Diag d;
	diag_init(&d, "fuzz.yaml");
	Carrier *c = spec_load_buffer("fuzz.yaml", (const char *)data, size, NULL, 0, &d);
	/* a failed load must say why; a successful one must not have errors */
	if (!c != (d.nerrors > 0) || (!c && !d.text))
		__builtin_trap();
	if (!c)
		check_form(&d, data, size);
	spec_carrier_free(c);
	diag_free(&d);
	return 0;
}
