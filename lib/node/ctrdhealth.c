/* The containerd probe's verdict; see ctrdhealth.h. */
#include <errno.h>
#include <string.h>

#include "ctrdhealth.h"
#include "jsonx.h"

static const char *const keys[] = { "version", "healthy", "checkedAt", "serverVersion", "error", NULL };

static bool is_version(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > CTRDHEALTH_VERSION_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      strchr(".+~_-", *s)))
			return false;
	return true;
}

static bool valid(const struct ctrdhealth *h)
{
	if ((uint64_t)h->checked_at > JSONX_UINT_MAX || h->checked_at < 0)
		return false;
	if (h->healthy)
		return is_version(h->server_version) && h->error[0] == '\0';
	return h->server_version[0] == '\0' && h->error[0] != '\0' && jsonx_is_line(h->error, CTRDHEALTH_ERROR_MAX);
}

int ctrdhealth_parse(const char *data, size_t len, struct ctrdhealth *ret, const char **err)
{
	if (len > CTRDHEALTH_MAX)
		return jsonx_fail(err, "document larger than CTRDHEALTH_MAX", -EMSGSIZE);
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int k = jsonx_parse_document(data, len, keys, CTRDHEALTH_VERSION, &root, err);
	if (k < 0)
		return k;
	struct ctrdhealth h = {};
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "healthy");
	if (!cJSON_IsBool(j))
		return jsonx_fail(err, "healthy: missing or not a boolean", -EINVAL);
	h.healthy = cJSON_IsTrue(j);
	uint64_t t;
	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "checkedAt"), JSONX_UINT_MAX, &t))
		return jsonx_fail(err, "checkedAt: missing or not an unsigned integer below 2^53", -EINVAL);
	h.checked_at = (time_t)t;
	j = cJSON_GetObjectItemCaseSensitive(root, "serverVersion");
	if (j) {
		if (!cJSON_IsString(j) || !is_version(j->valuestring))
			return jsonx_fail(err, "serverVersion: not a version string", -EINVAL);
		memcpy(h.server_version, j->valuestring, strlen(j->valuestring) + 1);
	}
	j = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (j) {
		if (!cJSON_IsString(j) || j->valuestring[0] == '\0' ||
		    !jsonx_is_line(j->valuestring, CTRDHEALTH_ERROR_MAX))
			return jsonx_fail(err, "error: not a line of 1..CTRDHEALTH_ERROR_MAX bytes", -EINVAL);
		memcpy(h.error, j->valuestring, strlen(j->valuestring) + 1);
	}
	if (h.healthy && !h.server_version[0])
		return jsonx_fail(err, "healthy without serverVersion", -EINVAL);
	if (h.healthy && h.error[0])
		return jsonx_fail(err, "healthy with an error", -EINVAL);
	if (!h.healthy && !h.error[0])
		return jsonx_fail(err, "unhealthy without an error", -EINVAL);
	if (!h.healthy && h.server_version[0])
		return jsonx_fail(err, "unhealthy with a serverVersion", -EINVAL);
	*ret = h;
	return 0;
}

int ctrdhealth_format(const struct ctrdhealth *h, char **ret, size_t *ret_len)
{
	if (!valid(h))
		return -EINVAL;
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root || !jsonx_add_uint(root, "version", CTRDHEALTH_VERSION) ||
	    !cJSON_AddBoolToObject(root, "healthy", h->healthy) ||
	    !jsonx_add_uint(root, "checkedAt", (uint64_t)h->checked_at))
		return -ENOMEM;
	if (h->healthy && !cJSON_AddStringToObject(root, "serverVersion", h->server_version))
		return -ENOMEM;
	if (!h->healthy && !cJSON_AddStringToObject(root, "error", h->error))
		return -ENOMEM;
	return jsonx_print(root, ret, ret_len);
}

int ctrdhealth_server_version(const char *out, char buf[static CTRDHEALTH_VERSION_MAX + 1])
{
	/* ctr version (containerd cmd/ctr/commands/version): "Client:" and
	 * "Server:" sections, each with an indented "Version:" line. */
	const char *s = strstr(out, "\nServer:\n");
	if (!s)
		return -ENOENT;
	s += strlen("\nServer:\n");
	while (*s == ' ' || *s == '\t') {
		while (*s == ' ' || *s == '\t')
			s++;
		size_t line = strcspn(s, "\n");
		if (line > strlen("Version:") && strncmp(s, "Version:", strlen("Version:")) == 0) {
			const char *v = s + strlen("Version:");
			while (*v == ' ' || *v == '\t')
				v++;
			size_t n = (size_t)(s + line - v);
			if (n == 0 || n > CTRDHEALTH_VERSION_MAX)
				return -ENOENT;
			char tmp[CTRDHEALTH_VERSION_MAX + 1];
			memcpy(tmp, v, n);
			tmp[n] = '\0';
			if (!is_version(tmp))
				return -ENOENT;
			memcpy(buf, tmp, n + 1);
			return 0;
		}
		s += line;
		if (*s == '\n')
			s++;
	}
	return -ENOENT;
}
