/* yaml.c: libyaml events -> a position-keeping tree, refusing everything a
 * spec has no use for (see yaml.h). */
#include "yaml.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static Pos mark_pos(yaml_mark_t m) { return (Pos){(int)m.line + 1, (int)m.column + 1}; }

/* Byte checks before libyaml sees the text: NUL, invalid UTF-8 (overlong
 * forms, surrogates and values past U+10FFFF included) and tabs. */
static int prescan(Diag *d, const unsigned char *s, size_t n)
{
	int line = 1, col = 1;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		Pos pos = {line, col};
		if (c == 0) {
			diag_error(d, pos, "NUL byte in spec");
			return -1;
		}
		if (c == '\t') {
			diag_error(d, pos, "tab character; indent with spaces and write no tabs in a spec");
			return -1;
		}
		if (c == '\n') {
			line++, col = 1, i++;
			continue;
		}
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
		int ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++) {
			ok = (s[i + k] & 0xc0) == 0x80;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		static const unsigned minv[] = {0, 0, 0x80, 0x800, 0x10000};
		if (ok && len > 1)
			ok = cp >= minv[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
		if (!ok) {
			diag_error(d, pos, "invalid UTF-8 byte 0x%02x", c);
			return -1;
		}
		i += len;
		col++;
	}
	return 0;
}

static YNode *new_node(YKind kind, Pos pos)
{
	YNode *n = calloc(1, sizeof *n);
	if (!n)
		abort();
	n->kind = kind;
	n->pos = pos;
	return n;
}

static void add_kid(YNode *p, YNode *k)
{
	YNode **kids = realloc(p->kids, (p->n + 1) * sizeof *kids);
	if (!kids)
		abort();
	kids[p->n++] = k;
	p->kids = kids;
}

void yn_free(YNode *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->n; i++)
		yn_free(n->kids[i]);
	free(n->kids);
	free(n->text);
	free(n);
}

YNode *yn_get(const YNode *map, const char *key)
{
	if (!map || map->kind != YN_MAP)
		return NULL;
	for (int i = 0; i + 1 < map->n; i += 2)
		if (!strcmp(map->kids[i]->text, key))
			return map->kids[i + 1];
	return NULL;
}

typedef struct {
	Diag *d;
	yaml_parser_t p;
	yaml_event_t ev;
	int have_ev;
} Reader;

static int next(Reader *r)
{
	if (r->have_ev)
		yaml_event_delete(&r->ev);
	r->have_ev = 0;
	if (!yaml_parser_parse(&r->p, &r->ev)) {
		Pos pos = mark_pos(r->p.problem_mark);
		const char *problem = r->p.problem ? r->p.problem : "unknown problem";
		if (r->p.context)
			diag_error(r->d, pos, "malformed YAML: %s %s", problem, r->p.context);
		else
			diag_error(r->d, pos, "malformed YAML: %s", problem);
		return -1;
	}
	r->have_ev = 1;
	return 0;
}

static int refuse_decorations(Reader *r, const unsigned char *anchor, const unsigned char *tag, int implicit)
{
	Pos pos = mark_pos(r->ev.start_mark);
	if (anchor) {
		diag_error(r->d, pos, "YAML anchors are not allowed in a spec");
		return -1;
	}
	if (tag && !implicit) {
		diag_error(r->d, pos, "YAML tags are not allowed in a spec");
		return -1;
	}
	return 0;
}

static int unbalanced(const char *s)
{
	int depth = 0;
	for (; *s; s++)
		depth += (*s == '(') - (*s == ')');
	return depth != 0;
}

/* In {flow: mappings} a comma ends an entry, so `{m: max(a, b)}` falls
 * apart into pieces; say so rather than report the pieces. */
static int check_flow_commas(Reader *r, YNode *m)
{
	for (int i = 0; i < m->n; i++) {
		YNode *k = m->kids[i];
		if (k->kind == YN_SCALAR && k->plain && unbalanced(k->text)) {
			diag_error(r->d, k->pos, "unbalanced parentheses in a {flow} mapping: a comma inside {...} "
						 "ends the entry; write this mapping in block style or quote the expression");
			return -1;
		}
	}
	return 0;
}

static int check_map(Reader *r, YNode *m, int flow)
{
	if (flow && check_flow_commas(r, m))
		return -1;
	for (int i = 0; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		if (k->kind != YN_SCALAR) {
			diag_error(r->d, k->pos, "a mapping key must be a name, not a %s",
				   k->kind == YN_MAP ? "mapping" : "list");
			return -1;
		}
		for (int j = 0; j < i; j += 2)
			if (!strcmp(m->kids[j]->text, k->text)) {
				diag_error(r->d, k->pos, "duplicate key '%s' (first at line %d)", k->text,
					   m->kids[j]->pos.line);
				return -1;
			}
	}
	return 0;
}

/* The current event starts a node; read it whole. */
static int read_node(Reader *r, int depth, YNode **out)
{
	yaml_event_t *ev = &r->ev;
	Pos pos = mark_pos(ev->start_mark);
	*out = NULL;
	if (depth > YAML_MAX_DEPTH) {
		diag_error(r->d, pos, "nesting deeper than %d levels", YAML_MAX_DEPTH);
		return -1;
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		diag_error(r->d, pos, "YAML aliases are not allowed in a spec");
		return -1;
	case YAML_SCALAR_EVENT: {
		if (refuse_decorations(r, ev->data.scalar.anchor, ev->data.scalar.tag,
				       ev->data.scalar.plain_implicit || ev->data.scalar.quoted_implicit))
			return -1;
		YNode *n = new_node(YN_SCALAR, pos);
		n->text = malloc(ev->data.scalar.length + 1);
		if (!n->text)
			abort();
		memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
		n->text[ev->data.scalar.length] = 0;
		n->style = ev->data.scalar.style;
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		*out = n;
		return 0;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		int is_map = ev->type == YAML_MAPPING_START_EVENT;
		if (is_map ? refuse_decorations(r, ev->data.mapping_start.anchor, ev->data.mapping_start.tag,
						ev->data.mapping_start.implicit)
			   : refuse_decorations(r, ev->data.sequence_start.anchor, ev->data.sequence_start.tag,
						ev->data.sequence_start.implicit))
			return -1;
		YNode *n = new_node(is_map ? YN_MAP : YN_SEQ, pos);
		int flow = is_map && ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
		*out = n;
		for (;;) {
			if (next(r))
				return -1;
			if (ev->type == YAML_SEQUENCE_END_EVENT || ev->type == YAML_MAPPING_END_EVENT)
				break;
			YNode *kid;
			int rc = read_node(r, depth + 1, &kid);
			if (kid)
				add_kid(n, kid);
			if (rc)
				return -1;
		}
		return is_map ? check_map(r, n, flow) : 0;
	}
	default:
		diag_error(r->d, pos, "unexpected YAML event");
		return -1;
	}
}

static int read_stream(Reader *r, YNode **root)
{
	int docs = 0;
	for (;;) {
		if (next(r))
			return -1;
		switch (r->ev.type) {
		case YAML_STREAM_END_EVENT:
			if (!*root) {
				diag_error(r->d, (Pos){1, 1}, "empty spec: expected a mapping with 'carrier', 'state', ...");
				return -1;
			}
			return 0;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				diag_error(r->d, mark_pos(r->ev.start_mark), "a spec is one YAML document; found a second");
				return -1;
			}
			if (r->ev.data.document_start.tag_directives.start !=
			    r->ev.data.document_start.tag_directives.end) {
				diag_error(r->d, mark_pos(r->ev.start_mark), "YAML tags are not allowed in a spec");
				return -1;
			}
			break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_START_EVENT:
			break;
		default:
			if (read_node(r, 1, root))
				return -1;
			break;
		}
	}
}

int yn_load(Diag *d, const char *buf, size_t len, YNode **root)
{
	*root = NULL;
	d->src = buf;
	d->srclen = len;
	if (len > YAML_MAX_BYTES) {
		diag_error(d, (Pos){0, 0}, "file is larger than 1 MiB (%zu bytes)", len);
		return -1;
	}
	if (prescan(d, (const unsigned char *)buf, len))
		return -1;
	Reader r = {.d = d};
	if (!yaml_parser_initialize(&r.p))
		abort();
	yaml_parser_set_input_string(&r.p, (const unsigned char *)buf, len);
	int rc = read_stream(&r, root);
	if (r.have_ev)
		yaml_event_delete(&r.ev);
	yaml_parser_delete(&r.p);
	if (rc) {
		yn_free(*root);
		*root = NULL;
	}
	return rc;
}

/* ---- positions inside scalars ---- */

static size_t line_start(const Diag *d, int line)
{
	size_t i = 0;
	for (int l = 1; l < line && i < d->srclen; i++)
		if (d->src[i] == '\n')
			l++;
	return i;
}

static int is_cont(unsigned char c) { return (c & 0xc0) == 0x80; }

Pos yn_scalar_pos(const Diag *d, const YNode *s, size_t off)
{
	if (!d->src || s->pos.line <= 0)
		return s->pos;
	const char *src = d->src;
	size_t i = line_start(d, s->pos.line), n = d->srclen;
	Pos p = {s->pos.line, 1};
	while (p.col < s->pos.col && i < n && src[i] != '\n') {
		i++;
		while (i < n && is_cont((unsigned char)src[i]))
			i++;
		p.col++;
	}
	if (s->style == YAML_LITERAL_SCALAR_STYLE || s->style == YAML_FOLDED_SCALAR_STYLE) {
		while (i < n && src[i] != '\n')
			i++;
		if (i < n)
			i++, p.line++, p.col = 1;
		while (i < n && src[i] == ' ')
			i++, p.col++;
	} else if (!s->plain && i < n) {
		i++, p.col++; /* the opening quote */
	}
	const char *v = s->text;
	for (size_t k = 0; k < off && v[k] && i < n; k++) {
		if (is_cont((unsigned char)v[k]))
			continue;
		if ((v[k] == ' ' || v[k] == '\n') && (src[i] == '\n' || (src[i] == ' ' && v[k] == '\n'))) {
			while (i < n && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r')) {
				if (src[i] == '\n')
					p.line++, p.col = 0;
				i++, p.col++;
			}
			continue;
		}
		if (src[i] != v[k] && (src[i] == '\\' || src[i] == '\'')) {
			i++, p.col++; /* an escape: the value has one character for two */
		}
		i++;
		p.col++;
		while (i < n && is_cont((unsigned char)src[i]))
			i++;
	}
	return p;
}
