/* The apply-result document; see result.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "jsonx.h"
#include "osc.h"
#include "result.h"

static int set_err(const char **err, const char *msg, int r)
{
	if (err)
		*err = msg;
	return r;
}

static bool step_is_valid(const char *s)
{
	size_t n = strnlen(s, RESULT_STEP_MAX + 1);
	if (n == 0 || n > RESULT_STEP_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

/* Checks everything but error (format sanitises it, parse checks it). */
static int check(const struct result *r, const char **err)
{
	if (r->checksum[0] != '\0' && !jsonx_is_sha256_hex(r->checksum))
		return set_err(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	if (r->checksum[0] == '\0' && r->success)
		return set_err(err, "checksum: empty on success", -EINVAL);
	if (r->generation > JSONX_UINT_MAX)
		return set_err(err, "generation: larger than 2^53-1", -EINVAL);
	if (r->finished_at < 0 || (uint64_t)r->finished_at > JSONX_UINT_MAX)
		return set_err(err, "finishedAt: out of range", -EINVAL);
	if (r->success && (r->failed_step || r->error))
		return set_err(err, "failedStep/error: present on success", -EINVAL);
	if (!r->success && !r->failed_step)
		return set_err(err, "failedStep: missing on failure", -EINVAL);
	if (r->failed_step && !step_is_valid(r->failed_step))
		return set_err(err, "failedStep: not 1..32 bytes of [a-z0-9-]", -EINVAL);
	if (r->restart_id && (r->restart_id[0] == '\0' || !jsonx_is_line(r->restart_id, DESIRED_RESTART_ID_MAX)))
		return set_err(err, "restartId: empty, too long or with control characters", -EINVAL);
	size_t n = 0;
	for (char **u = r->changed_units; u && *u; u++, n++) {
		if (n >= RESULT_CHANGED_UNITS_MAX)
			return set_err(err, "changedUnits: more than RESULT_CHANGED_UNITS_MAX", -EMSGSIZE);
		if (!osc_unit_name_is_valid(*u))
			return set_err(err, "changedUnits: invalid systemd unit name", -EINVAL);
		for (char **v = r->changed_units; v != u; v++)
			if (strcmp(*u, *v) == 0)
				return set_err(err, "changedUnits: duplicate unit name", -EINVAL);
	}
	return 0;
}

/* A copy of s with control characters replaced and cut to RESULT_ERROR_MAX
 * bytes without splitting a UTF-8 sequence. */
static char *sanitise(const char *s)
{
	size_t n = strnlen(s, RESULT_ERROR_MAX + 1);
	if (n > RESULT_ERROR_MAX) {
		n = RESULT_ERROR_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	char *c = strndup(s, n);
	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return c;
}

int result_format(const struct result *r, char **ret, size_t *ret_len)
{
	int k = check(r, NULL);
	if (k < 0)
		return k;

	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root)
		return -ENOMEM;
	if (!cJSON_AddNumberToObject(root, "version", RESULT_VERSION) ||
	    !cJSON_AddStringToObject(root, "checksum", r->checksum) ||
	    !jsonx_add_uint(root, "generation", r->generation) ||
	    !cJSON_AddBoolToObject(root, "success", r->success))
		return -ENOMEM;
	if (r->failed_step && !cJSON_AddStringToObject(root, "failedStep", r->failed_step))
		return -ENOMEM;
	if (r->error) {
		_cleanup_free_ char *e = sanitise(r->error);
		if (!e || !cJSON_AddStringToObject(root, "error", e))
			return -ENOMEM;
	}
	if (!jsonx_add_strv(root, "changedUnits", r->changed_units))
		return -ENOMEM;
	if (r->restart_id && !cJSON_AddStringToObject(root, "restartId", r->restart_id))
		return -ENOMEM;
	if (!jsonx_add_uint(root, "finishedAt", (uint64_t)r->finished_at))
		return -ENOMEM;

	return jsonx_print(root, ret, ret_len);
}

static const char *const keys[] = { "version", "checksum", "generation", "success", "failedStep", "error",
				    "changedUnits", "restartId", "finishedAt", NULL };

static int opt_string(const cJSON *root, const char *key, char **ret, const char **err, const char *type_err)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!j)
		return 0;
	if (!cJSON_IsString(j))
		return set_err(err, type_err, -EINVAL);
	char *s = strdup(j->valuestring);
	if (!s)
		return set_err(err, "out of memory", -ENOMEM);
	*ret = s;
	return 0;
}

int result_parse(const char *data, size_t len, struct result *ret, const char **err)
{
	if (len > RESULT_MAX)
		return set_err(err, "document larger than RESULT_MAX", -EMSGSIZE);
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int k = jsonx_parse_document(data, len, keys, RESULT_VERSION, &root, err);
	if (k < 0)
		return k;

	_cleanup_(result_done) struct result r = {};
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "checksum");
	if (!cJSON_IsString(j))
		return set_err(err, "checksum: missing or not a string", -EINVAL);
	if (j->valuestring[0] != '\0' && !jsonx_is_sha256_hex(j->valuestring))
		return set_err(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	memcpy(r.checksum, j->valuestring, strlen(j->valuestring) + 1);

	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "generation"), JSONX_UINT_MAX, &r.generation))
		return set_err(err, "generation: missing or not an unsigned integer below 2^53", -EINVAL);
	uint64_t t;
	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "finishedAt"), JSONX_UINT_MAX, &t))
		return set_err(err, "finishedAt: missing or not an unsigned integer below 2^53", -EINVAL);
	r.finished_at = (time_t)t;
	j = cJSON_GetObjectItemCaseSensitive(root, "success");
	if (!cJSON_IsBool(j))
		return set_err(err, "success: missing or not a boolean", -EINVAL);
	r.success = cJSON_IsTrue(j);

	if ((k = opt_string(root, "failedStep", &r.failed_step, err, "failedStep: not a string")) < 0 ||
	    (k = opt_string(root, "error", &r.error, err, "error: not a string")) < 0 ||
	    (k = opt_string(root, "restartId", &r.restart_id, err, "restartId: not a string")) < 0)
		return k;
	if (r.error && !jsonx_is_line(r.error, RESULT_ERROR_MAX))
		return set_err(err, "error: longer than RESULT_ERROR_MAX or with control characters", -EINVAL);

	const cJSON *units = cJSON_GetObjectItemCaseSensitive(root, "changedUnits");
	if (units) {
		if (!cJSON_IsArray(units))
			return set_err(err, "changedUnits: not an array", -EINVAL);
		k = jsonx_get_strv(units, RESULT_CHANGED_UNITS_MAX, &r.changed_units);
		if (k == -EMSGSIZE)
			return set_err(err, "changedUnits: more than RESULT_CHANGED_UNITS_MAX", k);
		if (k == -EINVAL)
			return set_err(err, "changedUnits: not a string", k);
		if (k < 0)
			return set_err(err, "out of memory", k);
	}

	if ((k = check(&r, err)) < 0)
		return k;
	*ret = r;
	memset(&r, 0, sizeof(r));
	return 0;
}

void result_done(struct result *r)
{
	if (!r)
		return;
	free(r->failed_step);
	free(r->error);
	free(r->restart_id);
	strv_free(r->changed_units);
	memset(r, 0, sizeof(*r));
}
