/* A small YAML document tree for the pure parsers of outside YAML (the
 * OperatingSystemConfig, gardener-node-agent's configuration).
 *
 * ytree_load() builds the tree of the single document in the bytes with
 * libyaml's event parser, refusing aliases, more than YTREE_EVENTS_MAX nodes
 * and nesting deeper than YTREE_DEPTH_MAX, and types every plain scalar the
 * way Go's yaml.v2 (and sigs.k8s.io/yaml) would, since Gardener reads the same
 * bytes with it. No I/O, no logging. Moved out of osc.c unchanged. */
#ifndef NA_YTREE_H
#define NA_YTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

#define YTREE_EVENTS_MAX (1u << 18) /* libyaml events (nodes) in one document */
#define YTREE_DEPTH_MAX 64          /* nesting of mappings and sequences */
#define YTREE_QUOTE_MAX 64          /* bytes of an offending value quoted in an error */

enum ynode_type { Y_SCALAR, Y_SEQ, Y_MAP };

enum yscalar_kind {
	YS_STR,
	YS_NULL,
	YS_BOOL,
	YS_INT,
	YS_FLOAT,
	YS_OTHER, /* an explicit tag we do not interpret */
};

struct ynode {
	enum ynode_type type;
	enum yscalar_kind kind;
	char *value; /* scalar bytes, NUL-terminated (may contain NUL) */
	size_t len;
	bool bool_value;
	int64_t int_value;
	struct ynode **items; /* sequence items; mapping: key, value, key, value... */
	size_t n_items;
	size_t cap_items;
	size_t line;
};

void ynode_free(struct ynode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct ynode *, ynode_free)

/* Builds the tree of the single document in data[0..len). On success *ret
 * owns the tree (free with ynode_free()); on failure returns -EINVAL (syntax,
 * aliases, several documents), -EMSGSIZE (limits) or -ENOMEM and writes the
 * reason to err (errlen bytes; err may be NULL). */
int ytree_load(const char *data, size_t len, struct ynode **ret, char *err, size_t errlen);

/* Looks key up in the mapping map: *ret is its value, NULL when the key is
 * missing or its value is null. A key given twice is -EINVAL, with the line
 * of the second one in *dup_line (Go's decoder would silently take the last
 * one; we refuse to guess). */
int ytree_map_get(const struct ynode *map, const char *key, const struct ynode **ret, size_t *dup_line);

/* Describes n for an error message, into buf (YTREE_DESCRIBE_MAX bytes):
 * "a string 'value' (line 3)", "a mapping (line 7)". Returns buf. */
#define YTREE_DESCRIBE_MAX (YTREE_QUOTE_MAX * 4 + 64)
const char *ytree_describe(char *buf, size_t size, const struct ynode *n);

/* "a string", "a mapping", ... for error messages. */
const char *ytree_kind_name(const struct ynode *n);

/* Writes value into buf as a printable, truncated quotation (no quotes):
 * bytes outside printable ASCII, backslash and quote as \xNN. buf should hold
 * YTREE_QUOTE_MAX * 4 + 8 bytes. Returns buf. */
const char *ytree_quote(char *buf, size_t size, const char *value, size_t len);

#endif
