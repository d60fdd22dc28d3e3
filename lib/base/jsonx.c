/* Strict JSON helpers; see jsonx.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
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

int jsonx_parse_document(const char *data, size_t len, const char *const *allowed, uint64_t version,
			 cJSON **ret, const char **err)
{
	cJSON *root = jsonx_parse(data, len);
	int r = 0;
	uint64_t v;
	if (!root)
		return jsonx_fail(err, "not valid JSON", -EINVAL);
	if (!cJSON_IsObject(root))
		r = jsonx_fail(err, "document: not a JSON object", -EINVAL);
	else if (jsonx_check_keys(root, allowed, NULL) < 0)
		r = jsonx_fail(err, "document: unknown or duplicate key", -EINVAL);
	else if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "version"), JSONX_UINT_MAX, &v))
		r = jsonx_fail(err, "version: missing or not an unsigned integer", -EINVAL);
	else if (v != version)
		r = jsonx_fail(err, "version: unsupported", -EPROTONOSUPPORT);
	if (r < 0) {
		cJSON_Delete(root);
		return r;
	}
	*ret = root;
	return 0;
}

int jsonx_print(const cJSON *root, char **ret, size_t *ret_len)
{
	char *out = cJSON_Print(root);
	if (!out)
		return -ENOMEM;
	size_t len = strlen(out);
	char *nl = realloc(out, len + 2);
	if (!nl) {
		free(out);
		return -ENOMEM;
	}
	nl[len++] = '\n';
	nl[len] = '\0';
	*ret = nl;
	if (ret_len)
		*ret_len = len;
	return 0;
}

cJSON *jsonx_add_strv(cJSON *obj, const char *name, char *const *strv)
{
	cJSON *a = cJSON_AddArrayToObject(obj, name);
	if (!a)
		return NULL;
	for (char *const *p = strv; p && *p; p++) {
		cJSON *s = cJSON_CreateString(*p);
		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			return NULL;
		}
	}
	return a;
}

int jsonx_get_strv(const cJSON *a, size_t max, char ***ret)
{
	if (!cJSON_IsArray(a))
		return -EINVAL;
	int n = cJSON_GetArraySize(a);
	if ((size_t)n > max)
		return -EMSGSIZE;
	_cleanup_strv_free_ char **v = calloc((size_t)n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	int i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, a) {
		if (!cJSON_IsString(e))
			return -EINVAL;
		if (!(v[i++] = strdup(e->valuestring)))
			return -ENOMEM;
	}
	*ret = TAKE_PTR(v);
	return n;
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
