/* yaml.h: the subset of YAML a spec may use, read with libyaml into a small
 * tree that keeps every node's position.
 *
 * Refused with a diagnostic: files over 1 MiB, NUL bytes, invalid UTF-8,
 * tabs, control characters, line breaks other than \n and \r\n, several
 * documents, anchors, aliases and tags, duplicate or non-scalar mapping
 * keys, nesting deeper than YAML_MAX_DEPTH and more than YAML_MAX_ENTRIES
 * entries in one mapping or list (which keeps every check on names cheap). */
#ifndef ASSOC_YAML_H
#define ASSOC_YAML_H

#include "compiler/front/diag.h"

enum { YAML_MAX_BYTES = 1 << 20, YAML_MAX_DEPTH = 16, YAML_MAX_ENTRIES = 1024 };

typedef enum { YN_SCALAR, YN_MAP, YN_SEQ } YKind;

typedef struct YNode YNode;
struct YNode {
	YKind kind;
	Pos pos;
	char *text;   /* scalar value, NUL-terminated */
	int style;    /* libyaml's scalar style */
	int plain;    /* 1 for a plain (unquoted) scalar */
	YNode **kids; /* maps: key, value, key, value, ... */
	int n;        /* number of kids */
};

/* Parse buf into *root; 0 on success, -1 with a diagnostic in d. */
int yn_load(Diag *d, const char *buf, size_t len, YNode **root);
void yn_free(YNode *n);
/* Map lookup by key text; NULL when absent. */
YNode *yn_get(const YNode *map, const char *key);
/* Position of character `off` of a scalar's value in the source text
 * (follows folded lines and quotes; falls back to the scalar's start). */
Pos yn_scalar_pos(const Diag *d, const YNode *s, size_t off);

#endif
