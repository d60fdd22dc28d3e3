/* The YAML document tree; see ytree.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cleanup.h"
#include "errbuf.h"
#include "strx.h"
#include "ytree.h"

void ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_items; i++)
		ynode_free(n->items[i]);
	free(n->items);
	free(n->value);
	free(n);
}

static int ynode_append(struct ynode *parent, struct ynode *child)
{
	if (parent->n_items == parent->cap_items) {
		size_t cap = parent->cap_items ? parent->cap_items * 2 : 8;
		struct ynode **items = reallocarray(parent->items, cap, sizeof(*items));
		if (!items)
			return -ENOMEM;
		parent->items = items;
		parent->cap_items = cap;
	}
	parent->items[parent->n_items++] = child;
	return 0;
}

/* Writes value into buf as a printable, truncated quotation (no quotes). */
const char *ytree_quote(char *buf, size_t size, const char *value, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (o + 8 >= size || i >= YTREE_QUOTE_MAX) {
			if (o + 4 < size) {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		/* Non-ASCII too: a quoted bidi override must not reorder the log line. */
		if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 0xf];
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* ---- scalar typing (yaml.v2 / YAML 1.1 resolution) -------------------- */

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

static bool resolve_null(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	return in_list(s, nulls);
}

static int resolve_bool(const char *s)
{
	static const char *const yes[] = { "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
					   "true", "True", "TRUE", NULL };
	static const char *const no[] = { "n", "N", "no", "No", "NO", "off", "Off", "OFF",
					  "false", "False", "FALSE", NULL };
	if (in_list(s, yes))
		return 1;
	if (in_list(s, no))
		return 0;
	return -1;
}

/* Integers as yaml.v2 reads them: [-+] then 0x.., 0o.., 0b.., 0.. (octal) or
 * decimal. Returns false for anything else, including overflow. */
static bool resolve_int(const char *s, size_t len, int64_t *ret)
{
	if (len == 0 || strlen(s) != len)
		return false;
	bool neg = false;
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0' && s[1] == 'o') {
		base = 8;
		s += 2;
	} else if (s[0] == '0' && s[1] == 'b') {
		base = 2;
		s += 2;
	} else if (s[0] == '0' && s[1] != '\0') {
		base = 8;
		s += 1;
	}
	if (*s == '\0')
		return false;
	uint64_t v = 0;
	for (; *s; s++) {
		int d = strx_hexval(*s);
		if (d < 0 || d >= base)
			return false;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (v > (uint64_t)INT64_MAX)
		return false;
	*ret = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

/* Anything else that yaml.v2 would read as a number: floats, .inf, .nan,
 * and digit strings that are not valid integers ("0899"). */
static bool resolve_float(const char *s)
{
	static const char *const special[] = { ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
					       "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN", NULL };
	if (in_list(s, special))
		return true;
	if (*s == '-' || *s == '+')
		s++;
	bool digits = false;
	while (*s >= '0' && *s <= '9') {
		s++;
		digits = true;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static void type_scalar(struct ynode *n, const yaml_event_t *ev)
{
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *v = n->value;
	if (tag && strcmp(tag, "!") != 0) {
		if (strcmp(tag, YAML_STR_TAG) == 0)
			n->kind = YS_STR;
		else if (strcmp(tag, YAML_NULL_TAG) == 0 && resolve_null(v))
			n->kind = YS_NULL;
		else if (strcmp(tag, YAML_BOOL_TAG) == 0 && resolve_bool(v) >= 0) {
			n->kind = YS_BOOL;
			n->bool_value = resolve_bool(v) == 1;
		} else if (strcmp(tag, YAML_INT_TAG) == 0 && resolve_int(v, n->len, &n->int_value))
			n->kind = YS_INT;
		else
			n->kind = YS_OTHER;
		return;
	}
	if (tag || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		n->kind = YS_STR; /* quoted, literal, folded, or "!" */
		return;
	}
	int b;
	if (resolve_null(v))
		n->kind = YS_NULL;
	else if ((b = resolve_bool(v)) >= 0) {
		n->kind = YS_BOOL;
		n->bool_value = b == 1;
	} else if (resolve_int(v, n->len, &n->int_value))
		n->kind = YS_INT;
	else if (resolve_float(v))
		n->kind = YS_FLOAT;
	else
		n->kind = YS_STR;
}

int ytree_map_get(const struct ynode *map, const char *key, const struct ynode **ret, size_t *dup_line)
{
	const struct ynode *found = NULL;
	size_t klen = strlen(key);
	*ret = NULL;
	for (size_t i = 0; i + 1 < map->n_items; i += 2) {
		const struct ynode *k = map->items[i];
		if (k->type != Y_SCALAR || k->len != klen || memcmp(k->value, key, klen) != 0)
			continue;
		if (found) {
			*dup_line = k->line;
			return -EINVAL;
		}
		found = map->items[i + 1];
	}
	if (found && found->type == Y_SCALAR && found->kind == YS_NULL)
		found = NULL;
	*ret = found;
	return 0;
}

const char *ytree_describe(char *buf, size_t size, const struct ynode *n)
{
	char q[YTREE_QUOTE_MAX * 4 + 8];
	if (n->type == Y_SCALAR)
		snprintf(buf, size, "%s '%s' (line %zu)", ytree_kind_name(n), ytree_quote(q, sizeof(q), n->value, n->len),
			 n->line);
	else
		snprintf(buf, size, "%s (line %zu)", ytree_kind_name(n), n->line);
	return buf;
}

const char *ytree_kind_name(const struct ynode *n)
{
	if (n->type == Y_SEQ)
		return "a list";
	if (n->type == Y_MAP)
		return "a mapping";
	switch (n->kind) {
	case YS_STR:
		return "a string";
	case YS_NULL:
		return "null";
	case YS_BOOL:
		return "a boolean";
	case YS_INT:
		return "an integer";
	case YS_FLOAT:
		return "a number";
	default:
		return "a tagged value";
	}
}

DEFINE_TRIVIAL_CLEANUP_FUNC(yaml_parser_t *, yaml_parser_delete)

static void yaml_event_deletep(yaml_event_t **e)
{
	if (*e)
		yaml_event_delete(*e);
}

/* Builds the tree of the single document in data. */
int ytree_load(const char *data, size_t len, struct ynode **ret, char *err, size_t errlen)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return errbuf_set(err, errlen, -ENOMEM, "yaml: cannot initialise the parser");
	_cleanup_(yaml_parser_deletep) _unused_ yaml_parser_t *pp = &parser;
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);

	_cleanup_(ynode_freep) struct ynode *root = NULL;
	struct ynode *stack[YTREE_DEPTH_MAX + 1];
	size_t depth = 0, events = 0, documents = 0;

	for (;;) {
		yaml_event_t event;
		if (!yaml_parser_parse(&parser, &event)) {
			if (parser.error == YAML_MEMORY_ERROR)
				return errbuf_set(err, errlen, -ENOMEM, "yaml: out of memory");
			return errbuf_set(err, errlen, -EINVAL, "yaml: line %zu column %zu: %s%s%s",
				    parser.problem_mark.line + 1, parser.problem_mark.column + 1,
				    parser.problem ? parser.problem : "syntax error",
				    parser.context ? " " : "", parser.context ? parser.context : "");
		}
		_cleanup_(yaml_event_deletep) _unused_ yaml_event_t *ev = &event;
		size_t line = event.start_mark.line + 1;

		if (++events > YTREE_EVENTS_MAX)
			return errbuf_set(err, errlen, -EMSGSIZE, "yaml: more than %u nodes", YTREE_EVENTS_MAX);

		struct ynode *n = NULL;
		switch (event.type) {
		case YAML_STREAM_END_EVENT:
			if (!root)
				return errbuf_set(err, errlen, -EINVAL, "yaml: empty document");
			*ret = TAKE_PTR(root);
			return 0;
		case YAML_DOCUMENT_START_EVENT:
			if (++documents > 1)
				return errbuf_set(err, errlen, -EINVAL, "yaml: line %zu: more than one document", line);
			continue;
		case YAML_ALIAS_EVENT:
			return errbuf_set(err, errlen, -EINVAL, "yaml: line %zu: aliases are not supported", line);
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth == 0)
				return errbuf_set(err, errlen, -EINVAL, "yaml: line %zu: unbalanced end", line);
			depth--;
			continue;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			n = calloc(1, sizeof(*n));
			if (!n)
				return errbuf_set(err, errlen, -ENOMEM, "out of memory");
			n->line = line;
			if (event.type == YAML_SCALAR_EVENT) {
				n->type = Y_SCALAR;
				n->len = event.data.scalar.length;
				n->value = malloc(n->len + 1);
				if (!n->value) {
					free(n);
					return errbuf_set(err, errlen, -ENOMEM, "out of memory");
				}
				memcpy(n->value, event.data.scalar.value, n->len);
				n->value[n->len] = '\0';
				type_scalar(n, &event);
			} else {
				n->type = event.type == YAML_SEQUENCE_START_EVENT ? Y_SEQ : Y_MAP;
			}
			break;
		default: /* stream start, document end */
			continue;
		}

		/* Attach n to its parent (or make it the root). */
		if (depth == 0) {
			if (root) {
				ynode_free(n);
				return errbuf_set(err, errlen, -EINVAL, "yaml: line %zu: more than one root node", line);
			}
			root = n;
		} else {
			int r = ynode_append(stack[depth - 1], n);
			if (r < 0) {
				ynode_free(n);
				return errbuf_set(err, errlen, r, "out of memory");
			}
		}
		if (n->type != Y_SCALAR) {
			if (depth >= YTREE_DEPTH_MAX)
				return errbuf_set(err, errlen, -EMSGSIZE, "yaml: line %zu: nested deeper than %d", line,
					    YTREE_DEPTH_MAX);
			stack[depth++] = n;
		}
	}
}
