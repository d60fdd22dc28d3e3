/* Strict JSON helpers; see jsonx.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "jsonx.h"

/* True when a string in the JSON text carries the escape \u0000, which
 * cJSON would silently turn into the end of the string. */
static bool has_nul_escape(const char *data, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (!in_string) {
			in_string = data[i] == '"';
			continue;
		}
		if (data[i] == '"') {
			in_string = false;
		} else if (data[i] == '\\' && i + 1 < len) {
			if (data[i + 1] == 'u' && i + 5 < len && memcmp(data + i + 2, "0000", 4) == 0)
				return true;
			i++; /* skip the escaped character */
		}
	}
	return false;
}

cJSON *jsonx_parse(const char *data, size_t len)
{
	const char *end = NULL;
	if (!data || len == 0 || memchr(data, '\0', len) || has_nul_escape(data, len))
		return NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!j)
		return NULL;
	/* cJSON stops after the first value: only whitespace may follow. */
	for (const char *p = end; p && p < data + len; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			cJSON_Delete(j);
			return NULL;
		}
	return j;
}

int jsonx_check_keys(const cJSON *obj, const char *const *allowed, const char **bad)
{
	for (const cJSON *c = obj->child; c; c = c->next) {
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = c->string && strcmp(c->string, *a) == 0;
		for (const cJSON *d = obj->child; ok && d != c; d = d->next)
			ok = strcmp(d->string, c->string) != 0;
		if (!ok) {
			if (bad)
				*bad = c->string ? c->string : "";
			return -EINVAL;
		}
	}
	return 0;
}

cJSON *jsonx_add_uint(cJSON *obj, const char *name, uint64_t v)
{
	char buf[24];
	if (v > JSONX_UINT_MAX)
		return NULL;
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_AddRawToObject(obj, name, buf);
}

bool jsonx_get_uint(const cJSON *item, uint64_t max, uint64_t *ret)
{
	if (!cJSON_IsNumber(item))
		return false;
	double v = item->valuedouble;
	if (!isfinite(v) || v < 0 || v > (double)max)
		return false;
	uint64_t u = (uint64_t)v;
	if ((double)u != v) /* a fraction */
		return false;
	*ret = u;
	return true;
}

bool jsonx_is_sha256_hex(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')) || i >= 64)
			return false;
	return i == 64;
}

bool jsonx_is_line(const char *s, size_t max)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || i >= max)
			return false;
	return true;
}
