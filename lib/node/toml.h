/* A TOML 1.0 document tree: parse, change, write back. For containerd's
 * config.toml, which the executor patches as gardener-node-agent does
 * (lib/node/criconfig.h) instead of replacing it, so what an OS image put
 * there (an nvidia runtime, a plugin's table, imports) stays.
 *
 * toml_parse() reads the whole of TOML 1.0 (tables, arrays of tables,
 * dotted and quoted keys, inline tables, every string form with its
 * escapes, integers in four bases, floats, booleans, dates and times kept
 * as their text) and refuses what TOML refuses (a key or table defined
 * twice, a value reopened as a table), naming the line. toml_format()
 * writes a document that parses back to the same tree: tables in the order
 * they were first defined, keys in their order, strings escaped, floats in
 * the shortest form that reads back the same; comments and the layout of
 * the input are not kept (gardener-node-agent's go-toml does not keep them
 * either).
 *
 * Pure: no I/O, no logging. Bounded: TOML_INPUT_MAX bytes, TOML_DEPTH_MAX
 * nested tables or arrays, TOML_NODES_MAX values. */
#ifndef NA_TOML_H
#define NA_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOML_INPUT_MAX (1u << 20)
#define TOML_DEPTH_MAX 32
#define TOML_NODES_MAX 65536
#define TOML_ERROR_MAX 160

enum toml_type { TOML_TABLE, TOML_ARRAY, TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_DATETIME };

struct toml_node {
	enum toml_type type;
	char *key;                  /* an entry of a table: its key (any bytes but NUL); NULL in an array */
	char *str;                  /* TOML_STRING: the value; TOML_DATETIME: its text as written */
	int64_t i;                  /* TOML_INT */
	double f;                   /* TOML_FLOAT */
	bool b;                     /* TOML_BOOL */
	struct toml_node **items;   /* TOML_TABLE: entries in order, keys unique; TOML_ARRAY: items */
	size_t n_items, allocated;
	unsigned flags;             /* TOML_F_* */
};

enum {
	TOML_F_ARRAY_OF_TABLES = 1u << 0, /* an array made by [[headers]]: written back as such */
	TOML_F_INLINE = 1u << 1,          /* an inline table: written back inline */
	TOML_F_DEFINED = 1u << 2,         /* parser bookkeeping: its [header] was seen */
	TOML_F_DOTTED = 1u << 3,          /* parser bookkeeping: made by a dotted key */
};

/* Parses data[0..len). Returns 0 and the root table in *ret (toml_free()),
 * -EINVAL with one line in err ("line 12: key 'x' defined twice"),
 * -EMSGSIZE beyond the bounds, -ENOMEM. */
int toml_parse(const char *data, size_t len, struct toml_node **ret, char *err, size_t err_size);

/* The document of root (a table), NUL-terminated, in *ret (free()).
 * Returns 0, -ENOMEM, -EINVAL (not a table, or a string with a NUL). */
int toml_format(const struct toml_node *root, char **ret);

void toml_free(struct toml_node *n);

static inline void toml_freep(struct toml_node **n)
{
	toml_free(*n);
}

/* A new node of type (strings: a copy of s; NULL s is ""). NULL when out of
 * memory. */
struct toml_node *toml_new(enum toml_type type);
struct toml_node *toml_new_string(const char *s);

/* Deep copy, NULL when out of memory. */
struct toml_node *toml_copy(const struct toml_node *n);

/* The entry key of table t, or NULL. */
struct toml_node *toml_get(const struct toml_node *t, const char *key);

/* Sets entry key of table t to v (taken: freed on failure too), replacing
 * an entry of that key in place (its position kept) or appending one.
 * Returns 0, -ENOMEM. */
int toml_set(struct toml_node *t, const char *key, struct toml_node *v);

/* Removes entry key of table t (nothing when there is none). */
void toml_remove(struct toml_node *t, const char *key);

/* Appends v (taken) to array a. Returns 0, -ENOMEM. */
int toml_append(struct toml_node *a, struct toml_node *v);

#endif
