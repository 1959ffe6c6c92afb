/* emit.h: code generation targets for `assoc emit`. */
#ifndef ASSOC_EMIT_H
#define ASSOC_EMIT_H

#include <stdio.h>

#include "compiler/cli/cli.h"

typedef struct {
	const char *name; /* "cuda", "ptx", "llvm", "asm" */
	/* Write the generated code to out; EXIT_OK, or EXIT_FAIL/EXIT_USAGE with msg. */
	int (*emit)(Carrier *c, const Opts *o, FILE *out, char *msg, size_t n);
} Target;

#endif
