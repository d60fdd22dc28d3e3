/* Small strict-JSON helpers on top of cJSON for the documents the programs
 * exchange among themselves (desired.json, result.json): those are written
 * by us, so anything unexpected is an error rather than something to skip.
 * Pure; no logging. */
#ifndef NA_JSONX_H
#define NA_JSONX_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/* _cleanup_(cJSON_Deletep) cJSON *root = ... */
DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete)

/* Largest integer a JSON number (an IEEE double) carries exactly: 2^53 - 1. */
#define JSONX_UINT_MAX ((UINT64_C(1) << 53) - 1)

/* The error convention of every parser here: *err (when err is not NULL)
 * names what was wrong, static text; returns r. */
static inline int jsonx_fail(const char **err, const char *what, int r)
{
	if (err)
		*err = what;
	return r;
}

/* Parses exactly len bytes as one JSON value (whitespace around it is fine,
 * anything else is not) and returns it, or NULL. NUL bytes and the escape
 * \u0000 are refused, so no string is silently cut short. The caller
 * cJSON_Delete()s. */
cJSON *jsonx_parse(const char *data, size_t len);

/* Parses a versioned document of ours: exactly len bytes (jsonx_parse()),
 * one object whose member names are all in allowed (NULL-terminated) and
 * none twice, with a member "version" equal to version. Returns 0 and the
 * object in *ret (the caller cJSON_Delete()s); -EINVAL, or
 * -EPROTONOSUPPORT for another version, with *err (when err is not NULL)
 * set to a static message that names what was wrong. */
int jsonx_parse_document(const char *data, size_t len, const char *const *allowed, uint64_t version,
			 cJSON **ret, const char **err);

/* Prints root indented, with a final newline, into a new string the caller
 * frees; *ret_len (when ret_len is not NULL) is its length. Returns 0 or
 * -ENOMEM. */
int jsonx_print(const cJSON *root, char **ret, size_t *ret_len);

/* Adds to obj an array member holding the strings of the NULL-terminated
 * vector strv (NULL: an empty array). Returns the array, or NULL on ENOMEM. */
cJSON *jsonx_add_strv(cJSON *obj, const char *name, char *const *strv);

/* Copies the JSON array a of strings into a new NULL-terminated vector the
 * caller strv_free()s. Returns the number of strings; -EINVAL when a is not
 * an array or holds anything but strings, -EMSGSIZE when it holds more than
 * max, -ENOMEM. *ret is written only on success. */
int jsonx_get_strv(const cJSON *a, size_t max, char ***ret);

/* Adds an integer member exactly (cJSON's own number printing keeps only
 * about 15 significant digits). NULL when v > JSONX_UINT_MAX or on ENOMEM. */
cJSON *jsonx_add_uint(cJSON *obj, const char *name, uint64_t v);

/* 0 when every member of the object obj has a name in allowed
 * (NULL-terminated) and no name occurs twice; -EINVAL otherwise, with *bad
 * pointing at the offending member name. */
int jsonx_check_keys(const cJSON *obj, const char *const *allowed, const char **bad);

/* An integral JSON number in 0..max (max <= JSONX_UINT_MAX). */
bool jsonx_get_uint(const cJSON *item, uint64_t max, uint64_t *ret);

/* True for exactly 64 lowercase hex digits. */
bool jsonx_is_sha256_hex(const char *s);

/* True when s has no control characters (< 0x20, 0x7f) and at most max bytes. */
bool jsonx_is_line(const char *s, size_t max);

#endif
