/* TOML document tree; see toml.h. The grammar is TOML 1.0.0's ABNF
 * (toml.abnf), read by recursive descent. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "strx.h"
#include "toml.h"

/* ---- nodes ---------------------------------------------------------------- */

struct toml_node *toml_new(enum toml_type type)
{
	struct toml_node *n = calloc(1, sizeof(*n));
	if (n)
		n->type = type;
	return n;
}

struct toml_node *toml_new_string(const char *s)
{
	struct toml_node *n = toml_new(TOML_STRING);
	if (n && !(n->str = strdup(s ? s : ""))) {
		free(n);
		return NULL;
	}
	return n;
}

void toml_free(struct toml_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_items; i++)
		toml_free(n->items[i]);
	free(n->items);
	free(n->key);
	free(n->str);
	free(n);
}

static int push(struct toml_node *parent, struct toml_node *v)
{
	if (parent->n_items == parent->allocated) {
		size_t a = parent->allocated ? parent->allocated * 2 : 4;
		struct toml_node **items = reallocarray(parent->items, a, sizeof(*items));
		if (!items)
			return -ENOMEM;
		parent->items = items;
		parent->allocated = a;
	}
	parent->items[parent->n_items++] = v;
	return 0;
}

struct toml_node *toml_copy(const struct toml_node *n)
{
	struct toml_node *c = toml_new(n->type);
	if (!c)
		return NULL;
	c->i = n->i;
	c->f = n->f;
	c->b = n->b;
	c->flags = n->flags;
	if ((n->key && !(c->key = strdup(n->key))) || (n->str && !(c->str = strdup(n->str)))) {
		toml_free(c);
		return NULL;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		struct toml_node *x = toml_copy(n->items[i]);
		if (!x || push(c, x) < 0) {
			toml_free(x);
			toml_free(c);
			return NULL;
		}
	}
	return c;
}

struct toml_node *toml_get(const struct toml_node *t, const char *key)
{
	if (!t || t->type != TOML_TABLE)
		return NULL;
	for (size_t i = 0; i < t->n_items; i++)
		if (strcmp(t->items[i]->key, key) == 0)
			return t->items[i];
	return NULL;
}

int toml_set(struct toml_node *t, const char *key, struct toml_node *v)
{
	char *k = strdup(key);
	if (!k) {
		toml_free(v);
		return -ENOMEM;
	}
	free(v->key);
	v->key = k;
	for (size_t i = 0; i < t->n_items; i++)
		if (strcmp(t->items[i]->key, key) == 0) {
			toml_free(t->items[i]);
			t->items[i] = v;
			return 0;
		}
	if (push(t, v) < 0) {
		toml_free(v);
		return -ENOMEM;
	}
	return 0;
}

void toml_remove(struct toml_node *t, const char *key)
{
	for (size_t i = 0; t && i < t->n_items; i++)
		if (strcmp(t->items[i]->key, key) == 0) {
			toml_free(t->items[i]);
			memmove(t->items + i, t->items + i + 1, (t->n_items - i - 1) * sizeof(*t->items));
			t->n_items--;
			return;
		}
}

int toml_append(struct toml_node *a, struct toml_node *v)
{
	if (push(a, v) < 0) {
		toml_free(v);
		return -ENOMEM;
	}
	return 0;
}

/* ---- parser --------------------------------------------------------------- */

struct parser {
	const char *p, *end;
	size_t line;
	size_t nodes;
	char *err;
	size_t err_size;
	struct toml_node *root;
	struct toml_node *cur;      /* the table key/value lines go to */
};

#define KEY_PARTS_MAX 64

static int fail(struct parser *ps, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parser *ps, int r, const char *fmt, ...)
{
	if (ps->err && ps->err_size && !ps->err[0]) {
		int k = snprintf(ps->err, ps->err_size, "line %zu: ", ps->line);
		va_list ap;
		va_start(ap, fmt);
		if (k >= 0 && (size_t)k < ps->err_size)
			vsnprintf(ps->err + k, ps->err_size - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return r;
}

static struct toml_node *node(struct parser *ps, enum toml_type type)
{
	if (++ps->nodes > TOML_NODES_MAX)
		return NULL;
	return toml_new(type);
}

static int out_of_nodes(struct parser *ps)
{
	return ps->nodes > TOML_NODES_MAX ? fail(ps, -EMSGSIZE, "more than %u values", TOML_NODES_MAX)
					  : fail(ps, -ENOMEM, "out of memory");
}

static bool at(const struct parser *ps, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(ps->end - ps->p) >= n && memcmp(ps->p, s, n) == 0;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

/* A comment runs to the end of the line; tab and printable bytes only. */
static int skip_comment(struct parser *ps)
{
	if (ps->p >= ps->end || *ps->p != '#')
		return 0;
	for (; ps->p < ps->end && *ps->p != '\n'; ps->p++) {
		unsigned char c = (unsigned char)*ps->p;
		if ((c < 0x20 && c != '\t' && !(c == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n')) || c == 0x7f)
			return fail(ps, -EINVAL, "a control character in a comment");
	}
	return 0;
}

static bool newline(struct parser *ps)
{
	if (at(ps, "\r\n")) {
		ps->p += 2;
		ps->line++;
		return true;
	}
	if (ps->p < ps->end && *ps->p == '\n') {
		ps->p++;
		ps->line++;
		return true;
	}
	return false;
}

/* ws, comments and newlines (inside arrays). */
static int skip_ws_nl(struct parser *ps)
{
	for (;;) {
		skip_ws(ps);
		int r = skip_comment(ps);
		if (r < 0)
			return r;
		if (!newline(ps))
			return 0;
	}
}

static bool bare_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* A growing byte buffer for strings. */
struct buf {
	char *s;
	size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *x = realloc(b->s, cap);
		if (!x)
			return -ENOMEM;
		b->s = x;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

static int utf8_add(struct buf *b, uint32_t c)
{
	char u[4];
	size_t n;
	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | (c >> 6 & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | (c >> 12 & 0x3f));
		u[2] = (char)(0x80 | (c >> 6 & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return buf_add(b, u, n);
}

/* One escape after the backslash of a basic string. */
static int escape(struct parser *ps, struct buf *b)
{
	if (ps->p >= ps->end)
		return fail(ps, -EINVAL, "a string ends in a backslash");
	char c = *ps->p++, e;
	switch (c) {
	case 'b':
		e = '\b';
		return buf_add(b, &e, 1);
	case 't':
		e = '\t';
		return buf_add(b, &e, 1);
	case 'n':
		e = '\n';
		return buf_add(b, &e, 1);
	case 'f':
		e = '\f';
		return buf_add(b, &e, 1);
	case 'r':
		e = '\r';
		return buf_add(b, &e, 1);
	case '"':
	case '\\':
		return buf_add(b, &c, 1);
	}
	if (c != 'u' && c != 'U')
		return fail(ps, -EINVAL, "an unknown escape '\\%c' in a string", c >= 0x20 && c < 0x7f ? c : '?');
	int digits = c == 'u' ? 4 : 8;
	uint32_t v = 0;
	for (int i = 0; i < digits; i++) {
		int h = ps->p < ps->end ? strx_hexval(*ps->p) : -1;
		if (h < 0)
			return fail(ps, -EINVAL, "\\%c needs %d hex digits", c, digits);
		v = v << 4 | (uint32_t)h;
		ps->p++;
	}
	if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || v == 0)
		return fail(ps, -EINVAL, "\\%c%0*" PRIx32 " is not a Unicode scalar value node-agent keeps", c, digits, v);
	return utf8_add(b, v);
}

static bool string_byte_ok(unsigned char c, bool multiline)
{
	return c >= 0x20 ? c != 0x7f : c == '\t' || (multiline && (c == '\n' || c == '\r'));
}

/* A string of any of the four forms at ps->p into *ret. */
static int string(struct parser *ps, char **ret)
{
	struct buf b = { 0 };
	int r = 0;
	bool literal = *ps->p == '\'';
	const char *q = literal ? "'''" : "\"\"\"";
	bool multi = at(ps, q);
	ps->p += multi ? 3 : 1;
	if (multi)
		(void)newline(ps); /* a newline right after the opening quotes is trimmed */
	if (buf_add(&b, "", 0) < 0)
		return fail(ps, -ENOMEM, "out of memory");
	for (;;) {
		if (ps->p >= ps->end) {
			r = fail(ps, -EINVAL, "a string is not closed");
			break;
		}
		char c = *ps->p;
		if (multi && at(ps, q)) {
			/* Up to two quotes more belong to the string. */
			size_t extra = 0;
			while (extra < 2 && ps->p + 3 + extra < ps->end && ps->p[3 + extra] == q[0])
				extra++;
			if ((r = buf_add(&b, ps->p, extra)) < 0)
				break;
			ps->p += 3 + extra;
			break;
		}
		if (!multi && c == q[0]) {
			ps->p++;
			break;
		}
		if (!multi && (c == '\n' || c == '\r')) {
			r = fail(ps, -EINVAL, "a newline in a one-line string");
			break;
		}
		if (!literal && c == '\\') {
			ps->p++;
			if (multi) {
				/* A line-ending backslash trims the whitespace after it. */
				const char *s = ps->p;
				while (s < ps->end && (*s == ' ' || *s == '\t'))
					s++;
				if (s < ps->end && (*s == '\n' || (*s == '\r' && s + 1 < ps->end && s[1] == '\n'))) {
					ps->p = s;
					while (ps->p < ps->end) {
						skip_ws(ps);
						if (!newline(ps))
							break;
					}
					continue;
				}
			}
			if ((r = escape(ps, &b)) < 0)
				break;
			continue;
		}
		if (!string_byte_ok((unsigned char)c, multi)) {
			r = fail(ps, -EINVAL, "a control character in a string");
			break;
		}
		if (c == '\n')
			ps->line++;
		if ((r = buf_add(&b, &c, 1)) < 0)
			break;
		ps->p++;
	}
	if (r < 0) {
		free(b.s);
		return r == -ENOMEM ? fail(ps, r, "out of memory") : r;
	}
	*ret = b.s;
	return 0;
}

/* simple-key *( dot-sep simple-key ) into parts (malloc'ed each). */
static int key(struct parser *ps, char *parts[KEY_PARTS_MAX], size_t *ret_n)
{
	size_t n = 0;
	int r;
	for (;;) {
		skip_ws(ps);
		if (n == KEY_PARTS_MAX)
			return fail(ps, -EMSGSIZE, "a key of more than %u parts", KEY_PARTS_MAX);
		if (ps->p < ps->end && (*ps->p == '"' || *ps->p == '\'')) {
			if (at(ps, "\"\"\"") || at(ps, "'''"))
				return fail(ps, -EINVAL, "a multi-line string as a key");
			if ((r = string(ps, &parts[n])) < 0)
				return r;
		} else {
			const char *s = ps->p;
			while (ps->p < ps->end && bare_char(*ps->p))
				ps->p++;
			if (ps->p == s)
				return fail(ps, -EINVAL, "a key expected");
			if (!(parts[n] = strndup(s, (size_t)(ps->p - s))))
				return fail(ps, -ENOMEM, "out of memory");
		}
		n++;
		*ret_n = n;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '.')
			return 0;
		ps->p++;
	}
}

static void parts_free(char *parts[KEY_PARTS_MAX], size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(parts[i]);
}

static int value(struct parser *ps, unsigned depth, struct toml_node **ret);

/* A table entry for part, created as an implicit table when missing.
 * Walking through an array of tables goes to its last table. */
static int descend(struct parser *ps, struct toml_node *t, const char *part, bool dotted, struct toml_node **ret)
{
	struct toml_node *x = toml_get(t, part);
	if (!x) {
		if (!(x = node(ps, TOML_TABLE)))
			return out_of_nodes(ps);
		x->flags = dotted ? TOML_F_DOTTED : 0;
		if (toml_set(t, part, x) < 0)
			return fail(ps, -ENOMEM, "out of memory");
	} else if (x->type == TOML_ARRAY && (x->flags & TOML_F_ARRAY_OF_TABLES) && !dotted)
		x = x->items[x->n_items - 1];
	else if (x->type != TOML_TABLE || (x->flags & TOML_F_INLINE))
		return fail(ps, -EINVAL, "'%s' is a value already, not a table", part);
	else if (dotted && (x->flags & TOML_F_DEFINED) && !(x->flags & TOML_F_DOTTED))
		return fail(ps, -EINVAL, "table '%s' is defined by a header; a dotted key may not add to it", part);
	*ret = x;
	return 0;
}

/* keyval into table t (the current one, or an inline table). */
static int keyval(struct parser *ps, struct toml_node *t, unsigned depth)
{
	char *parts[KEY_PARTS_MAX];
	size_t n = 0;
	int r = key(ps, parts, &n);
	if (r < 0)
		goto out;
	if (ps->p >= ps->end || *ps->p != '=') {
		r = fail(ps, -EINVAL, "'=' expected after key '%s'", parts[n - 1]);
		goto out;
	}
	ps->p++;
	skip_ws(ps);
	for (size_t i = 0; i + 1 < n; i++)
		if ((r = descend(ps, t, parts[i], true, &t)) < 0)
			goto out;
	if (toml_get(t, parts[n - 1])) {
		r = fail(ps, -EINVAL, "key '%s' defined twice", parts[n - 1]);
		goto out;
	}
	struct toml_node *v = NULL;
	if ((r = value(ps, depth, &v)) < 0)
		goto out;
	if ((r = toml_set(t, parts[n - 1], v)) < 0)
		r = fail(ps, r, "out of memory");
out:
	parts_free(parts, n);
	return r;
}

/* Integers, floats, dates and times: the token's bytes. */
static bool num_char(char c)
{
	return bare_char(c) || c == '+' || c == '.' || c == ':';
}

/* dec-int with "_" only between digits, no leading zero. */
static bool dec_digits_ok(const char *s, size_t n, bool leading_zero_ok)
{
	if (n == 0 || s[0] == '_' || s[n - 1] == '_')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && s[i + 1] != '_')))
			return false;
	return leading_zero_ok || n == 1 || s[0] != '0';
}

static int number(struct parser *ps, struct toml_node **ret)
{
	const char *s = ps->p;
	while (ps->p < ps->end && num_char(*ps->p))
		ps->p++;
	/* A date and a time may be separated by one space. */
	if (ps->p - s == 10 && s[4] == '-' && ps->p + 2 < ps->end && *ps->p == ' ' && ps->p[1] >= '0' &&
	    ps->p[1] <= '9') {
		ps->p++;
		while (ps->p < ps->end && num_char(*ps->p))
			ps->p++;
	}
	size_t n = (size_t)(ps->p - s);
	char tok[128];
	if (n == 0 || n >= sizeof(tok))
		return fail(ps, -EINVAL, "a value expected");
	memcpy(tok, s, n);
	tok[n] = '\0';
	struct toml_node *v;
	if ((n >= 8 && tok[2] == ':') || (n >= 10 && tok[4] == '-' && tok[7] == '-')) {
		for (size_t i = 0; i < n; i++)
			if (!strchr("0123456789-:.TtZz+ ", tok[i]))
				return fail(ps, -EINVAL, "'%s' is not a date or time", tok);
		if (!(v = node(ps, TOML_DATETIME)))
			return out_of_nodes(ps);
		if (!(v->str = strdup(tok))) {
			toml_free(v);
			return fail(ps, -ENOMEM, "out of memory");
		}
		*ret = v;
		return 0;
	}
	const char *d = tok;
	bool neg = false;
	if (*d == '+' || *d == '-') {
		neg = *d == '-';
		d++;
	}
	if (strcmp(d, "inf") == 0 || strcmp(d, "nan") == 0) {
		if (!(v = node(ps, TOML_FLOAT)))
			return out_of_nodes(ps);
		v->f = d[0] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
		*ret = v;
		return 0;
	}
	char clean[128];
	size_t k = 0;
	for (const char *c = tok; *c; c++)
		if (*c != '_')
			clean[k++] = *c;
	clean[k] = '\0';
	if (d == tok && d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b')) {
		int base = d[1] == 'x' ? 16 : d[1] == 'o' ? 8 : 2;
		const char *digits = d + 2;
		size_t dn = strlen(digits);
		bool ok = dn > 0 && digits[0] != '_' && digits[dn - 1] != '_';
		for (size_t i = 0; ok && i < dn; i++)
			ok = digits[i] == '_' ? digits[i + 1] != '_' : (strx_hexval(digits[i]) >= 0 && strx_hexval(digits[i]) < base);
		errno = 0;
		char *e;
		uint64_t u = ok ? strtoull(clean + 2, &e, base) : 0;
		if (!ok || errno || *e || u > INT64_MAX)
			return fail(ps, -EINVAL, "'%s' is not an integer (or too large)", tok);
		if (!(v = node(ps, TOML_INT)))
			return out_of_nodes(ps);
		v->i = (int64_t)u;
		*ret = v;
		return 0;
	}
	/* dec-int [frac] [exp] */
	const char *dot = strchr(d, '.'), *ex = strpbrk(d, "eE");
	size_t int_len = dot ? (size_t)(dot - d) : ex ? (size_t)(ex - d) : strlen(d);
	bool ok = dec_digits_ok(d, int_len, false);
	if (ok && dot) {
		size_t fl = ex ? (size_t)(ex - dot - 1) : strlen(dot + 1);
		ok = (!ex || ex > dot) && dec_digits_ok(dot + 1, fl, true);
	}
	if (ok && ex) {
		const char *x = ex + 1;
		if (*x == '+' || *x == '-')
			x++;
		ok = dec_digits_ok(x, strlen(x), true);
	}
	if (!ok)
		return fail(ps, -EINVAL, "'%s' is not a number", tok);
	errno = 0;
	char *e;
	if (!dot && !ex) {
		long long i = strtoll(clean, &e, 10);
		if (errno || *e)
			return fail(ps, -EINVAL, "'%s' is not a 64-bit integer", tok);
		if (!(v = node(ps, TOML_INT)))
			return out_of_nodes(ps);
		v->i = i;
	} else {
		double f = strtod(clean, &e);
		if (*e)
			return fail(ps, -EINVAL, "'%s' is not a number", tok);
		if (!(v = node(ps, TOML_FLOAT)))
			return out_of_nodes(ps);
		v->f = f;
	}
	*ret = v;
	return 0;
}

static int array(struct parser *ps, unsigned depth, struct toml_node **ret)
{
	_cleanup_(toml_freep) struct toml_node *a = node(ps, TOML_ARRAY);
	int r;
	if (!a)
		return out_of_nodes(ps);
	ps->p++; /* [ */
	for (;;) {
		if ((r = skip_ws_nl(ps)) < 0)
			return r;
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		struct toml_node *v = NULL;
		if ((r = value(ps, depth, &v)) < 0)
			return r;
		if (toml_append(a, v) < 0)
			return fail(ps, -ENOMEM, "out of memory");
		if ((r = skip_ws_nl(ps)) < 0)
			return r;
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		return fail(ps, -EINVAL, "',' or ']' expected in an array");
	}
	*ret = TAKE_PTR(a);
	return 0;
}

static int inline_table(struct parser *ps, unsigned depth, struct toml_node **ret)
{
	_cleanup_(toml_freep) struct toml_node *t = node(ps, TOML_TABLE);
	int r;
	if (!t)
		return out_of_nodes(ps);
	ps->p++; /* { */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		t->flags = TOML_F_INLINE | TOML_F_DEFINED;
		*ret = TAKE_PTR(t);
		return 0;
	}
	for (;;) {
		if ((r = keyval(ps, t, depth)) < 0)
			return r;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		return fail(ps, -EINVAL, "',' or '}' expected in an inline table");
	}
	t->flags = TOML_F_INLINE | TOML_F_DEFINED;
	*ret = TAKE_PTR(t);
	return 0;
}

/* Marks every table below t as inline (frozen): nothing may add to it. */
static void freeze(struct toml_node *t)
{
	if (t->type == TOML_TABLE)
		t->flags |= TOML_F_INLINE;
	for (size_t i = 0; i < t->n_items; i++)
		freeze(t->items[i]);
}

static int value(struct parser *ps, unsigned depth, struct toml_node **ret)
{
	if (depth >= TOML_DEPTH_MAX)
		return fail(ps, -EMSGSIZE, "nested deeper than %u", TOML_DEPTH_MAX);
	if (ps->p >= ps->end)
		return fail(ps, -EINVAL, "a value expected");
	char c = *ps->p;
	struct toml_node *v;
	int r;
	if (c == '"' || c == '\'') {
		char *s = NULL;
		if ((r = string(ps, &s)) < 0)
			return r;
		if (!(v = node(ps, TOML_STRING))) {
			free(s);
			return out_of_nodes(ps);
		}
		v->str = s;
		*ret = v;
		return 0;
	}
	if (c == '[')
		return array(ps, depth + 1, ret);
	if (c == '{') {
		if ((r = inline_table(ps, depth + 1, ret)) < 0)
			return r;
		freeze(*ret);
		return 0;
	}
	if (at(ps, "true") && (ps->p + 4 == ps->end || !num_char(ps->p[4]))) {
		ps->p += 4;
		if (!(v = node(ps, TOML_BOOL)))
			return out_of_nodes(ps);
		v->b = true;
		*ret = v;
		return 0;
	}
	if (at(ps, "false") && (ps->p + 5 == ps->end || !num_char(ps->p[5]))) {
		ps->p += 5;
		if (!(v = node(ps, TOML_BOOL)))
			return out_of_nodes(ps);
		*ret = v;
		return 0;
	}
	return number(ps, ret);
}

/* [table] or [[array of tables]]. */
static int header(struct parser *ps)
{
	bool aot = at(ps, "[[");
	ps->p += aot ? 2 : 1;
	char *parts[KEY_PARTS_MAX];
	size_t n = 0;
	int r = key(ps, parts, &n);
	if (r < 0)
		goto out;
	if (!(aot ? at(ps, "]]") : at(ps, "]"))) {
		r = fail(ps, -EINVAL, "'%s' expected after a table header", aot ? "]]" : "]");
		goto out;
	}
	ps->p += aot ? 2 : 1;
	struct toml_node *t = ps->root;
	for (size_t i = 0; i + 1 < n; i++)
		if ((r = descend(ps, t, parts[i], false, &t)) < 0)
			goto out;
	struct toml_node *x = toml_get(t, parts[n - 1]);
	if (aot) {
		if (!x) {
			if (!(x = node(ps, TOML_ARRAY))) {
				r = out_of_nodes(ps);
				goto out;
			}
			x->flags = TOML_F_ARRAY_OF_TABLES;
			if ((r = toml_set(t, parts[n - 1], x)) < 0) {
				r = fail(ps, r, "out of memory");
				goto out;
			}
		} else if (x->type != TOML_ARRAY || !(x->flags & TOML_F_ARRAY_OF_TABLES)) {
			r = fail(ps, -EINVAL, "'%s' is not an array of tables", parts[n - 1]);
			goto out;
		}
		struct toml_node *e = node(ps, TOML_TABLE);
		if (!e) {
			r = out_of_nodes(ps);
			goto out;
		}
		e->flags = TOML_F_DEFINED;
		if ((r = toml_append(x, e)) < 0) {
			r = fail(ps, r, "out of memory");
			goto out;
		}
		ps->cur = e;
	} else {
		if (!x) {
			if (!(x = node(ps, TOML_TABLE))) {
				r = out_of_nodes(ps);
				goto out;
			}
			if ((r = toml_set(t, parts[n - 1], x)) < 0) {
				r = fail(ps, r, "out of memory");
				goto out;
			}
		} else if (x->type != TOML_TABLE || (x->flags & (TOML_F_INLINE | TOML_F_DOTTED))) {
			r = fail(ps, -EINVAL, "'%s' is a value already, not a table", parts[n - 1]);
			goto out;
		} else if (x->flags & TOML_F_DEFINED) {
			r = fail(ps, -EINVAL, "table '%s' defined twice", parts[n - 1]);
			goto out;
		}
		x->flags |= TOML_F_DEFINED;
		ps->cur = x;
	}
out:
	parts_free(parts, n);
	return r;
}

int toml_parse(const char *data, size_t len, struct toml_node **ret, char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	struct parser ps = { .p = data, .end = data + len, .line = 1, .err = err, .err_size = err_size };
	if (len > TOML_INPUT_MAX)
		return fail(&ps, -EMSGSIZE, "more than %u bytes", TOML_INPUT_MAX);
	if (memchr(data, '\0', len))
		return fail(&ps, -EINVAL, "a NUL byte");
	_cleanup_(toml_freep) struct toml_node *root = toml_new(TOML_TABLE);
	if (!root)
		return fail(&ps, -ENOMEM, "out of memory");
	root->flags = TOML_F_DEFINED;
	ps.root = ps.cur = root;
	if (at(&ps, "\xef\xbb\xbf"))
		ps.p += 3;
	int r;
	while (ps.p < ps.end) {
		skip_ws(&ps);
		if (ps.p < ps.end && *ps.p == '[')
			r = header(&ps);
		else if (ps.p < ps.end && *ps.p != '#' && *ps.p != '\n' && *ps.p != '\r')
			r = keyval(&ps, ps.cur, 0);
		else
			r = 0;
		if (r < 0)
			return r;
		skip_ws(&ps);
		if ((r = skip_comment(&ps)) < 0)
			return r;
		if (ps.p < ps.end && !newline(&ps))
			return fail(&ps, -EINVAL, "the end of the line expected");
	}
	*ret = TAKE_PTR(root);
	return 0;
}

/* ---- writer --------------------------------------------------------------- */

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

static void put_key(FILE *f, const char *k)
{
	bool bare = *k != '\0';
	for (const char *c = k; *c && bare; c++)
		bare = bare_char(*c);
	if (bare)
		fputs(k, f);
	else
		put_string(f, k);
}

/* The shortest decimal form that reads back as the same double. */
static void put_float(FILE *f, double v)
{
	if (isnan(v)) {
		fputs("nan", f);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "-inf" : "inf", f);
		return;
	}
	char b[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	fputs(b, f);
	if (!strpbrk(b, ".en"))
		fputs(".0", f);
}

static void put_value(FILE *f, const struct toml_node *v);

static void put_inline_table(FILE *f, const struct toml_node *t)
{
	fputc('{', f);
	for (size_t i = 0; i < t->n_items; i++) {
		fputs(i ? ", " : " ", f);
		put_key(f, t->items[i]->key);
		fputs(" = ", f);
		put_value(f, t->items[i]);
	}
	fputs(t->n_items ? " }" : "}", f);
}

static void put_value(FILE *f, const struct toml_node *v)
{
	switch (v->type) {
	case TOML_STRING:
		put_string(f, v->str);
		break;
	case TOML_INT:
		fprintf(f, "%" PRId64, v->i);
		break;
	case TOML_FLOAT:
		put_float(f, v->f);
		break;
	case TOML_BOOL:
		fputs(v->b ? "true" : "false", f);
		break;
	case TOML_DATETIME:
		fputs(v->str, f);
		break;
	case TOML_TABLE:
		put_inline_table(f, v);
		break;
	case TOML_ARRAY:
		fputc('[', f);
		for (size_t i = 0; i < v->n_items; i++) {
			if (i)
				fputs(", ", f);
			put_value(f, v->items[i]);
		}
		fputc(']', f);
		break;
	}
}

/* Written under a [header] of their own: tables not inline, arrays of
 * tables made by [[headers]]. */
static bool is_section(const struct toml_node *v)
{
	return (v->type == TOML_TABLE && !(v->flags & TOML_F_INLINE)) ||
	       (v->type == TOML_ARRAY && (v->flags & TOML_F_ARRAY_OF_TABLES) && v->n_items > 0);
}

/* Headers nest at most this deep (toml_format() refuses deeper trees). */
#define PATH_MAX_PARTS (KEY_PARTS_MAX + TOML_DEPTH_MAX)

struct path {
	const char *part[PATH_MAX_PARTS];
	size_t n;
};

static void put_header(FILE *f, const struct path *p, bool aot)
{
	fputs(aot ? "\n[[" : "\n[", f);
	for (size_t i = 0; i < p->n; i++) {
		if (i)
			fputc('.', f);
		put_key(f, p->part[i]);
	}
	fputs(aot ? "]]\n" : "]\n", f);
}

static void put_table(FILE *f, const struct toml_node *t, struct path *p, bool header, bool aot)
{
	bool has_values = false, has_sections = false;
	for (size_t i = 0; i < t->n_items; i++) {
		if (is_section(t->items[i]))
			has_sections = true;
		else
			has_values = true;
	}
	if (header && (has_values || !has_sections || aot))
		put_header(f, p, aot);
	for (size_t i = 0; i < t->n_items; i++) {
		const struct toml_node *v = t->items[i];
		if (is_section(v))
			continue;
		if (p->n)
			fputs("  ", f);
		put_key(f, v->key);
		fputs(" = ", f);
		put_value(f, v);
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->n_items && p->n < ELEMENTSOF(p->part); i++) {
		const struct toml_node *v = t->items[i];
		if (!is_section(v))
			continue;
		p->part[p->n++] = v->key;
		if (v->type == TOML_TABLE)
			put_table(f, v, p, true, false);
		else
			for (size_t k = 0; k < v->n_items; k++)
				if (v->items[k]->type == TOML_TABLE)
					put_table(f, v->items[k], p, true, true);
		p->n--;
	}
}

/* What the writer can write: datetimes of one line, arrays of tables of
 * tables only, nesting within PATH_MAX_PARTS. */
static bool writable(const struct toml_node *n, size_t depth)
{
	if (depth >= PATH_MAX_PARTS)
		return false;
	for (size_t i = 0; i < n->n_items; i++)
		if (!writable(n->items[i], depth + 1))
			return false;
	/* An array of tables holds tables only (the writer's [[headers]]). */
	if (n->type == TOML_ARRAY && (n->flags & TOML_F_ARRAY_OF_TABLES))
		for (size_t i = 0; i < n->n_items; i++)
			if (n->items[i]->type != TOML_TABLE)
				return false;
	return n->type != TOML_DATETIME || (n->str && !strpbrk(n->str, "\n\r#"));
}

int toml_format(const struct toml_node *root, char **ret)
{
	if (!root || root->type != TOML_TABLE || !writable(root, 0))
		return -EINVAL;
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	struct path p = { .n = 0 };
	put_table(f, root, &p, false, false);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
