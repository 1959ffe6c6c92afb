/* emit.h: code generation targets for `assoc emit`. */
#ifndef ASSOC_EMIT_H
#define ASSOC_EMIT_H

#include <stdio.h>

#include "compiler/cli/cli.h"

typedef struct {
	const char *name; /* "cuda", "ptx", "llvm", "asm" */
	/* Optional: work begun before the carrier's verdict, to run beside it
	 * (ptx: NVRTC's compile).  Its handle, NULL where nothing began (emit
	 * then does it all), goes to emit, or to drop when the verdict refuses
	 * the carrier. */
	void *(*start)(Carrier *c, const Opts *o);
	void (*drop)(void *early);
	/* Write the generated code to out; EXIT_OK, or EXIT_FAIL (a check
	 * failed) or EXIT_USAGE/EXIT_UNABLE with msg.  Frees early. */
	int (*emit)(Carrier *c, const Opts *o, void *early, FILE *out, char *msg, size_t n);
} Target;

#endif
