/* yaml.c: libyaml events -> a position-keeping tree, refusing everything a
 * spec has no use for (see yaml.h). */
#include "compiler/front/yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static Pos mark_pos(yaml_mark_t m) { return (Pos){(int)m.line + 1, (int)m.column + 1}; }

/* Refuse a code point a spec may not hold; 0 when it is fine.  Line
 * breaks other than \n and \r\n are refused too: libyaml counts them as
 * new lines, and diagnostics would then point at the wrong line. */
static int bad_char(Diag *d, Pos pos, unsigned cp, const unsigned char *s, size_t left)
{
	if (cp == 0)
		diag_error(d, pos, "NUL byte in spec");
	else if (cp == '\r' && !(left > 1 && s[1] == '\n'))
		diag_error(d, pos, "carriage return without a line feed; end lines with \\n or \\r\\n");
	else if (cp == 0x85 || cp == 0x2028 || cp == 0x2029)
		diag_error(d, pos, "Unicode line separator U+%04X; end lines with \\n or \\r\\n", cp);
	else if ((cp < 0x20 && cp != '\n' && cp != '\r') || (cp >= 0x7f && cp < 0xa0))
		diag_error(d, pos, "control character U+%04X in spec", cp);
	else if (cp == 0xfeff)
		diag_error(d, pos, "byte order mark (U+FEFF) inside the file");
	else if (cp == 0xfffe || cp == 0xffff)
		diag_error(d, pos, "non-character U+%04X in spec", cp);
	else
		return 0;
	return -1;
}

/* Byte checks before libyaml sees the text: encoding, NUL, tabs that
 * indent (YAML takes them elsewhere: between tokens, in comments, in a
 * plain scalar), control characters and stray line separators. */
static int prescan(Diag *d, const unsigned char *s, size_t n)
{
	int line = 1, col = 1, indent = 1;
	if (n >= 2 && ((s[0] == 0xff && s[1] == 0xfe) || (s[0] == 0xfe && s[1] == 0xff))) {
		diag_error(d, (Pos){1, 1}, "the file is UTF-16 (it starts with a UTF-16 byte order mark); "
					   "save it as UTF-8");
		return -1;
	}
	for (size_t i = 0; i < n;) {
		Pos pos = {line, col};
		unsigned cp;
		size_t len = diag_utf8_decode(s + i, n - i, &cp);
		if (!len) {
			diag_error(d, pos, "invalid UTF-8 byte 0x%02x; a spec must be UTF-8 text", s[i]);
			return -1;
		}
		if (cp == '\t' && indent) {
			diag_error(d, pos, "tab character in the indentation; indent with spaces");
			return -1;
		}
		if (cp != '\t' && bad_char(d, pos, cp, s + i, n - i))
			return -1;
		indent = cp == '\n' || (indent && cp == ' ');
		if (cp == '\n')
			line++, col = 0;
		if (cp != '\r')
			col++;
		i += len;
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
	if (!(p->n & (p->n - 1))) { /* grow at powers of two */
		YNode **kids = realloc(p->kids, (p->n ? 2 * (size_t)p->n : 1) * sizeof *kids);
		if (!kids)
			abort();
		p->kids = kids;
	}
	p->kids[p->n++] = k;
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

static size_t line_start(const Diag *d, int line)
{
	size_t i = 0;
	for (int l = 1; l < line && i < d->srclen; i++)
		if (d->src[i] == '\n')
			l++;
	return i;
}

static int is_cont(unsigned char c) { return (c & 0xc0) == 0x80; }

/* Byte offset of a position (columns count characters). */
static size_t pos_offset(const Diag *d, Pos p)
{
	size_t i = line_start(d, p.line);
	for (int c = 1; c < p.col && i < d->srclen && d->src[i] != '\n'; c++)
		for (i++; i < d->srclen && is_cont((unsigned char)d->src[i]); i++)
			;
	return i;
}

/* Position of the file's last character, for problems found past it. */
static Pos last_pos(const Diag *d)
{
	size_t n = d->srclen;
	while (n && (d->src[n - 1] == '\n' || d->src[n - 1] == '\r'))
		n--;
	Pos p = {1, 1};
	for (size_t i = 0; i + 1 < n; i++) {
		unsigned char c = (unsigned char)d->src[i];
		if (c == '\n')
			p.line++, p.col = 1;
		else if (!is_cont((unsigned char)d->src[i + 1]) && c != '\r')
			p.col++;
	}
	return p;
}

/* libyaml's reader errors carry a byte offset, not a mark. */
static Pos offset_pos(const Diag *d, size_t off)
{
	Pos p = {1, 1};
	for (size_t i = 0; i < off && i < d->srclen; i++) {
		unsigned char c = (unsigned char)d->src[i];
		if (c == '\n')
			p.line++, p.col = 1;
		else if ((c & 0xc0) != 0x80 && c != '\r')
			p.col++;
	}
	return p;
}

#define BANG_HINT "a value that starts with '!' is a tag to YAML, so quote an expression that starts with " \
		  "not, as in mask: '!(j > i)'"

/* A '!' that begins a value on pos's line, before pos, and is not a '!!' or
 * '!<...>' tag: an expression's not, which YAML took for a tag. */
static int bang_before(const Diag *d, Pos pos, Pos *at)
{
	size_t lo = line_start(d, pos.line), hi = pos_offset(d, pos);
	for (size_t i = lo; i <= hi && i < d->srclen; i++) {
		if (d->src[i] != '!' || (i + 1 < d->srclen && strchr("!<", d->src[i + 1])))
			continue;
		size_t k = i;
		while (k > lo && d->src[k - 1] == ' ')
			k--;
		if (k > lo && !strchr(":{[,", d->src[k - 1]))
			continue;
		at->line = pos.line, at->col = 1;
		for (size_t c = lo; c < i; c++)
			at->col += !is_cont((unsigned char)d->src[c]);
		return 1;
	}
	return 0;
}

/* A '- ' right after a key's ':' (or a flow mapping's '{' or ','): an
 * expression's minus, where YAML sees a list entry. */
static int minus_entry(const Diag *d, size_t off)
{
	if (off + 1 >= d->srclen || d->src[off] != '-' || d->src[off + 1] != ' ')
		return 0;
	size_t k = off;
	while (k > 0 && d->src[k - 1] == ' ')
		k--;
	return k > 0 && strchr(":{,", d->src[k - 1]);
}

/* libyaml's problem, said plainly where it can be, at a place that has a
 * line to quote. */
static void report_parse_error(Reader *r)
{
	yaml_parser_t *p = &r->p;
	Pos pos = p->error == YAML_READER_ERROR ? offset_pos(r->d, p->problem_offset) : mark_pos(p->problem_mark);
	const char *problem = p->problem ? p->problem : "unknown problem";
	size_t off = pos_offset(r->d, pos);
	int at_end = off >= r->d->srclen || strstr(problem, "end of stream");
	if (p->context && at_end) {
		/* say where the unfinished thing starts, not where the file ends */
		static const char *const plain[][2] = {
			{"flow mapping", "a {...} mapping"}, {"flow sequence", "a [...] list"},
			{"flow node", "a {...} or [...]"},   {"quoted scalar", "a quoted string"},
		};
		const char *what = p->context;
		if (!strncmp(what, "while scanning ", 15) || !strncmp(what, "while parsing ", 14))
			what = strchr(what + 6, ' ') + 1;
		for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
			if (strstr(what, plain[i][0]))
				what = plain[i][1];
		Pos start = mark_pos(p->context_mark);
		if (pos_offset(r->d, start) < r->d->srclen)
			diag_error(r->d, start, "malformed YAML: the file ends inside %s that starts here", what);
		else
			diag_error(r->d, last_pos(r->d), "malformed YAML: the file ends inside %s", what);
		return;
	}
	if (at_end)
		pos = last_pos(r->d);
	Pos bang;
	if (!at_end && bang_before(r->d, pos, &bang)) {
		diag_error(r->d, bang, "malformed YAML: " BANG_HINT);
		return;
	}
	if (!at_end && minus_entry(r->d, off)) {
		diag_error(r->d, pos, "malformed YAML: '- ' after a key starts a list entry to YAML; write a minus "
				      "against its operand (-x) or quote the expression");
		return;
	}
	if (strstr(problem, "<document start>")) {
		diag_error(r->d, pos, "malformed YAML: unexpected text after the end of the spec");
		return;
	}
	if (strstr(problem, "cannot start any token") && !at_end && r->d->src[off] == '\t') {
		diag_error(r->d, pos, "malformed YAML: a tab here does not separate tokens for YAML; write a space");
		return;
	}
	if (strstr(problem, "cannot start any token") && !at_end) {
		diag_error(r->d, pos, "malformed YAML: '%c' cannot start a YAML value; quote the value",
			   r->d->src[off]);
		return;
	}
	char where[160] = "";
	if (p->context) {
		Pos c = mark_pos(p->context_mark);
		if (c.line != pos.line || c.col != pos.col)
			snprintf(where, sizeof where, " %s that starts at %d:%d", p->context, c.line, c.col);
		else
			snprintf(where, sizeof where, " %s", p->context);
	}
	const char *hint = "";
	if (p->context && strstr(p->context, "flow") && !at_end && strchr("[]{}", r->d->src[off]))
		hint = "; inside {...} or [...] quote a value that holds brackets ('f32[d]'), or use block style";
	else if (strstr(problem, "mapping values are not allowed"))
		hint = " (a ': ' inside a value starts a mapping; quote the value, or fix the indentation)";
	diag_error(r->d, pos, "malformed YAML: %s%s%s", problem, where, hint);
}

static int next(Reader *r)
{
	if (r->have_ev)
		yaml_event_delete(&r->ev);
	r->have_ev = 0;
	if (!yaml_parser_parse(&r->p, &r->ev)) {
		report_parse_error(r);
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
		Pos bang; /* a scalar's: a tag on {...} or [...] is no expression's not */
		int not = r->ev.type == YAML_SCALAR_EVENT && bang_before(r->d, pos, &bang) && bang.col == pos.col;
		diag_error(r->d, pos, "YAML tags are not allowed in a spec%s", not ? "; " BANG_HINT : "");
		return -1;
	}
	return 0;
}

static int paren_depth(const YNode *n)
{
	int depth = 0;
	if (n->kind == YN_SCALAR && n->plain)
		for (const char *s = n->text; *s; s++)
			depth += (*s == '(') - (*s == ')');
	return depth;
}

/* In {flow: mappings} a comma ends an entry, so `{m: max(a, b)}` falls
 * apart into pieces, one opening more parentheses than it closes and a
 * later one closing more; say so rather than report the pieces. */
static int check_flow_commas(Reader *r, YNode *m)
{
	for (int i = 0; i < m->n; i++) {
		if (paren_depth(m->kids[i]) <= 0)
			continue;
		for (int j = i + 1; j < m->n; j++)
			if (paren_depth(m->kids[j]) < 0) {
				diag_error(r->d, m->kids[i]->pos,
					   "a comma inside {...} ends the entry, so this expression is cut at its first "
					   "comma; write the mapping in block style or quote the expression");
				return -1;
			}
	}
	return 0;
}

static int before(Pos a, Pos b) { return a.line < b.line || (a.line == b.line && a.col < b.col); }

/* By text, then by place in the file. */
static int by_key(const void *x, const void *y)
{
	const YNode *a = *(const YNode *const *)x, *b = *(const YNode *const *)y;
	int c = strcmp(a->text, b->text);
	return c ? c : before(a->pos, b->pos) ? -1 : before(b->pos, a->pos);
}

static int check_map(Reader *r, YNode *m, int flow)
{
	if (flow && check_flow_commas(r, m))
		return -1;
	int nk = m->n / 2;
	YNode **keys = calloc(nk ? nk : 1, sizeof *keys);
	if (!keys)
		abort();
	for (int i = 0; i < m->n; i += 2) {
		YNode *k = m->kids[i];
		if (k->kind != YN_SCALAR) {
			diag_error(r->d, k->pos, "a mapping key must be a name, not a %s",
				   k->kind == YN_MAP ? "mapping" : "list");
			free(keys);
			return -1;
		}
		keys[i / 2] = k;
	}
	/* sorted by text, equal keys in file order: each run's second key is
	 * a duplicate; report the one that comes first in the file */
	qsort(keys, nk, sizeof *keys, by_key);
	const YNode *dup = NULL, *first = NULL;
	for (int i = 1; i < nk; i++)
		if (!strcmp(keys[i]->text, keys[i - 1]->text) &&
		    (i < 2 || strcmp(keys[i - 1]->text, keys[i - 2]->text)) && (!dup || before(keys[i]->pos, dup->pos)))
			dup = keys[i], first = keys[i - 1];
	if (dup)
		diag_error(r->d, dup->pos, "duplicate key '%s' (first at line %d)", dup->text, first->pos.line);
	free(keys);
	return dup ? -1 : 0;
}

/* The current event starts a node; read it whole. */
static int read_node(Reader *r, int depth, YNode **out)
{
	yaml_event_t *ev = &r->ev;
	Pos pos = mark_pos(ev->start_mark);
	if (pos_offset(r->d, pos) >= r->d->srclen) /* an empty value at the very end */
		pos = last_pos(r->d);
	*out = NULL;
	if (depth > YAML_MAX_DEPTH && (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT)) {
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
		if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length)) {
			diag_error(r->d, pos, "NUL character (\\0) in a quoted string");
			return -1;
		}
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
			if (n->n >= (is_map ? 2 * YAML_MAX_ENTRIES : YAML_MAX_ENTRIES)) {
				diag_error(r->d, mark_pos(ev->start_mark), "more than %d entries in one %s",
					   YAML_MAX_ENTRIES, is_map ? "mapping" : "list");
				return -1;
			}
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

/* The first %TAG line of a document start: the event's mark is that of
 * its first directive, which may be a %YAML line.  Directives start
 * their lines. */
static Pos tag_directive_pos(const Diag *d, const yaml_event_t *ev)
{
	for (int line = (int)ev->start_mark.line + 1; line <= (int)ev->end_mark.line + 1; line++) {
		size_t i = line_start(d, line);
		if (i + 4 <= d->srclen && !memcmp(d->src + i, "%TAG", 4))
			return (Pos){line, 1};
	}
	return mark_pos(ev->start_mark);
}

static int read_stream(Reader *r, YNode **root)
{
	int docs = 0;
	for (;;) {
		if (next(r))
			return -1;
		switch (r->ev.type) {
		case YAML_STREAM_END_EVENT:
			if (*root && (*root)->kind == YN_SCALAR && (*root)->plain && !(*root)->text[0]) {
				yn_free(*root); /* a document with nothing in it: "---" */
				*root = NULL;
			}
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
				diag_error(r->d, tag_directive_pos(r->d, &r->ev), "YAML tags are not allowed in a spec");
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
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		buf += 3, len -= 3; /* a UTF-8 byte order mark; libyaml skips it too */
	d->src = buf;
	d->srclen = len;
	if (len > YAML_MAX_BYTES) {
		diag_error(d, (Pos){0, 0}, "file is larger than 1 MiB (%zu bytes); a spec is a short text", len);
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


static int hexval(const char *s, size_t n, unsigned *v)
{
	*v = 0;
	for (size_t k = 0; k < n; k++) {
		const char *digits = "0123456789abcdef", *d = strchr(digits, s[k] | 0x20);
		if (!s[k] || !d)
			return -1;
		*v = *v << 4 | (unsigned)(d - digits);
	}
	return 0;
}

/* Length of the double-quoted escape at s (s[0] == '\\'). */
static size_t escape_len(const char *s, size_t n)
{
	size_t len = n < 2 ? n : s[1] == 'x' ? 4 : s[1] == 'u' ? 6 : s[1] == 'U' ? 10 : 2;
	return len < n ? len : n;
}

/* Whether the escape at s (s[0] == '\\') stands for white space, which the
 * value skips as it skips the source's. */
static int escape_is_space(const char *s, size_t n)
{
	size_t len = escape_len(s, n);
	unsigned v;
	if (len == 2)
		return s[1] && strchr(" \ttnr", s[1]); /* "\<TAB>" is an escaped tab */
	return len > 2 && !hexval(s + 2, len - 2, &v) && (v == ' ' || v == '\t' || v == '\n' || v == '\r');
}

/* Advance over source white space: line breaks, indentation, tabs (YAML
 * takes them between tokens and inside scalars), quotes' escaped line
 * breaks and escapes that stand for white space. */
static size_t skip_space(const Diag *d, const YNode *s, size_t i, Pos *p)
{
	const char *src = d->src;
	size_t n = d->srclen;
	int dq = s->style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	while (i < n) {
		if (src[i] == '\n') {
			i++, p->line++, p->col = 1;
		} else if (src[i] == ' ' || src[i] == '\t' || src[i] == '\r') {
			i++, p->col++;
		} else if (dq && src[i] == '\\' && i + 1 < n && (src[i + 1] == '\n' || src[i + 1] == '\r')) {
			i++, p->col++; /* an escaped line break: the break follows */
		} else if (dq && src[i] == '\\' && escape_is_space(src + i, n - i)) {
			size_t len = escape_len(src + i, n - i);
			i += len, p->col += (int)len;
		} else {
			break;
		}
	}
	return i;
}

/* Advance over the source of one character of the value. */
static size_t skip_char(const Diag *d, const YNode *s, size_t i, Pos *p)
{
	const char *src = d->src;
	size_t n = d->srclen, len = 1;
	if (s->style == YAML_DOUBLE_QUOTED_SCALAR_STYLE && src[i] == '\\')
		len = escape_len(src + i, n - i);
	else if (s->style == YAML_SINGLE_QUOTED_SCALAR_STYLE && src[i] == '\'' && i + 1 < n && src[i + 1] == '\'')
		len = 2;
	i += len, p->col += (int)len;
	while (i < n && is_cont((unsigned char)src[i]))
		i++;
	return i;
}

/* White space in a value may come from folded lines, indentation or
 * escapes, so only the other characters are matched with the source, one
 * by one. */
Pos yn_scalar_pos(const Diag *d, const YNode *s, size_t off)
{
	if (!d->src || s->pos.line <= 0 || s->kind != YN_SCALAR)
		return s->pos;
	const char *src = d->src, *v = s->text;
	size_t i = pos_offset(d, s->pos), n = d->srclen;
	Pos p = s->pos;
	if (s->style == YAML_LITERAL_SCALAR_STYLE || s->style == YAML_FOLDED_SCALAR_STYLE) {
		while (i < n && src[i] != '\n') /* the header line; the text starts on the next */
			i++;
	} else if (!s->plain && i < n) {
		i++, p.col++; /* the opening quote */
	}
	for (size_t k = 0; k < off && v[k] && i < n; k++) {
		unsigned char c = (unsigned char)v[k];
		if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || is_cont(c))
			continue;
		i = skip_space(d, s, i, &p);
		if (i < n)
			i = skip_char(d, s, i, &p);
	}
	size_t vlen = strlen(v);
	unsigned char c = (unsigned char)v[off < vlen ? off : vlen];
	if (c && c != ' ' && c != '\n' && c != '\t' && c != '\r')
		skip_space(d, s, i, &p);
	return p;
}
