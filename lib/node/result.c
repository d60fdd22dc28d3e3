/* The apply-result document; see result.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "inplace.h"
#include "jsonx.h"
#include "osc.h"
#include "result.h"

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

static bool reason_is_valid(const char *s)
{
	size_t n = strnlen(s, RESULT_REASON_MAX + 1);
	if (n == 0 || n > RESULT_REASON_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

/* A unit list: at most RESULT_CHANGED_UNITS_MAX distinct valid names. The
 * messages name the field; key is one of three literals. */
static int check_units(char *const *units, const char *key, const char **err)
{
	static const struct { const char *key, *many, *invalid, *dup; } msgs[] = {
		{ "changedUnits", "changedUnits: more than RESULT_CHANGED_UNITS_MAX",
		  "changedUnits: invalid systemd unit name", "changedUnits: duplicate unit name" },
		{ "restartedUnits", "restartedUnits: more than RESULT_CHANGED_UNITS_MAX",
		  "restartedUnits: invalid systemd unit name", "restartedUnits: duplicate unit name" },
		{ "stoppedUnits", "stoppedUnits: more than RESULT_CHANGED_UNITS_MAX",
		  "stoppedUnits: invalid systemd unit name", "stoppedUnits: duplicate unit name" },
	};
	size_t m = 0;
	while (strcmp(msgs[m].key, key) != 0)
		m++;
	size_t n = 0;
	for (char *const *u = units; u && *u; u++, n++) {
		if (n >= RESULT_CHANGED_UNITS_MAX)
			return jsonx_fail(err, msgs[m].many, -EMSGSIZE);
		if (!osc_unit_name_is_valid(*u))
			return jsonx_fail(err, msgs[m].invalid, -EINVAL);
		for (char *const *v = units; v != u; v++)
			if (strcmp(*u, *v) == 0)
				return jsonx_fail(err, msgs[m].dup, -EINVAL);
	}
	return 0;
}

/* 1..INPLACE_VERSION_MAX (0.. when may_be_empty) printable ASCII bytes without space. */
static bool version_is_valid(const char *s, bool may_be_empty)
{
	size_t n = strnlen(s, INPLACE_VERSION_MAX + 1);
	if ((n == 0 && !may_be_empty) || n > INPLACE_VERSION_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

/* Checks everything but error (format sanitises it, parse checks it). */
static int check(const struct result *r, const char **err)
{
	if (r->checksum[0] != '\0' && !jsonx_is_sha256_hex(r->checksum))
		return jsonx_fail(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	if (r->checksum[0] == '\0' && r->success)
		return jsonx_fail(err, "checksum: empty on success", -EINVAL);
	if (r->generation > JSONX_UINT_MAX)
		return jsonx_fail(err, "generation: larger than 2^53-1", -EINVAL);
	if (r->finished_at < 0 || (uint64_t)r->finished_at > JSONX_UINT_MAX)
		return jsonx_fail(err, "finishedAt: out of range", -EINVAL);
	if (r->success && (r->failed_step || r->error))
		return jsonx_fail(err, "failedStep/error: present on success", -EINVAL);
	if (!r->success && !r->failed_step)
		return jsonx_fail(err, "failedStep: missing on failure", -EINVAL);
	if (r->failed_step && !step_is_valid(r->failed_step))
		return jsonx_fail(err, "failedStep: not 1..32 bytes of [a-z0-9-]", -EINVAL);
	if (r->restart_id && (r->restart_id[0] == '\0' || !jsonx_is_line(r->restart_id, DESIRED_RESTART_ID_MAX)))
		return jsonx_fail(err, "restartId: empty, too long or with control characters", -EINVAL);
	int k;
	if ((k = check_units(r->changed_units, "changedUnits", err)) < 0 ||
	    (k = check_units(r->restarted_units, "restartedUnits", err)) < 0 ||
	    (k = check_units(r->stopped_units, "stoppedUnits", err)) < 0)
		return k;
	const struct result_units_ready *c = &r->units_ready;
	if (c->present) {
		if (!reason_is_valid(c->reason))
			return jsonx_fail(err, "unitsReady.reason: not 1..32 letters", -EINVAL);
		if (!c->message || !jsonx_is_line(c->message, RESULT_CONDITION_MESSAGE_MAX))
			return jsonx_fail(err, "unitsReady.message: missing, too long or with control characters", -EINVAL);
		if (c->checked_at < 0 || (uint64_t)c->checked_at > JSONX_UINT_MAX)
			return jsonx_fail(err, "unitsReady.checkedAt: out of range", -EINVAL);
	}
	const struct result_inplace *ip = &r->inplace;
	if (ip->present) {
		if (ip->kinds == 0 || (ip->kinds & ~(unsigned)INPLACE_KINDS_ALL))
			return jsonx_fail(err, "inPlaceUpdate.kinds: empty or unknown kind", -EINVAL);
		if (!inplace_state_name((enum inplace_state)ip->state))
			return jsonx_fail(err, "inPlaceUpdate.state: unknown", -EINVAL);
		if (!ip->reason != (ip->state != INPLACE_STATE_FAILED))
			return jsonx_fail(err, "inPlaceUpdate.reason: required with state failed and only then", -EINVAL);
		if (ip->reason && (ip->reason[0] == '\0' || !jsonx_is_line(ip->reason, RESULT_ERROR_MAX)))
			return jsonx_fail(err, "inPlaceUpdate.reason: empty, too long or with control characters", -EINVAL);
		if (!ip->os_desired != !ip->os_running)
			return jsonx_fail(err, "inPlaceUpdate.osVersion: desired and running go together", -EINVAL);
		if (ip->os_desired && (!version_is_valid(ip->os_desired, false) || !version_is_valid(ip->os_running, true)))
			return jsonx_fail(err, "inPlaceUpdate.osVersion: not a version string", -EINVAL);
		if (ip->state == INPLACE_STATE_SUCCESSFUL && !r->success)
			return jsonx_fail(err, "inPlaceUpdate.state: successful with success false", -EINVAL);
		if (ip->state != INPLACE_STATE_SUCCESSFUL && r->success)
			return jsonx_fail(err, "inPlaceUpdate.state: not successful with success true", -EINVAL);
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
	if ((r->restarted_units && !jsonx_add_strv(root, "restartedUnits", r->restarted_units)) ||
	    (r->stopped_units && !jsonx_add_strv(root, "stoppedUnits", r->stopped_units)))
		return -ENOMEM;
	if (r->units_ready.present) {
		const struct result_units_ready *c = &r->units_ready;
		cJSON *o = cJSON_AddObjectToObject(root, "unitsReady");
		if (!o || !cJSON_AddStringToObject(o, "status", c->ready ? "True" : "False") ||
		    !cJSON_AddStringToObject(o, "reason", c->reason) ||
		    !cJSON_AddStringToObject(o, "message", c->message) ||
		    !jsonx_add_uint(o, "checkedAt", (uint64_t)c->checked_at))
			return -ENOMEM;
	}
	if (r->inplace.present) {
		const struct result_inplace *ip = &r->inplace;
		cJSON *o = cJSON_AddObjectToObject(root, "inPlaceUpdate");
		cJSON *kinds = o ? cJSON_AddArrayToObject(o, "kinds") : NULL;
		if (!kinds)
			return -ENOMEM;
		for (unsigned i = 0; i < INPLACE_N_KINDS; i++) {
			if (!(ip->kinds & (1u << i)))
				continue;
			cJSON *s = cJSON_CreateString(inplace_kind_name(1u << i));
			if (!s || !cJSON_AddItemToArray(kinds, s)) {
				cJSON_Delete(s);
				return -ENOMEM;
			}
		}
		if (!cJSON_AddStringToObject(o, "state", inplace_state_name((enum inplace_state)ip->state)) ||
		    (ip->reason && !cJSON_AddStringToObject(o, "reason", ip->reason)))
			return -ENOMEM;
		if (ip->os_desired) {
			cJSON *v = cJSON_AddObjectToObject(o, "osVersion");
			if (!v || !cJSON_AddStringToObject(v, "desired", ip->os_desired) ||
			    !cJSON_AddStringToObject(v, "running", ip->os_running))
				return -ENOMEM;
		}
	}
	if (!jsonx_add_uint(root, "finishedAt", (uint64_t)r->finished_at))
		return -ENOMEM;

	return jsonx_print(root, ret, ret_len);
}

static const char *const keys[] = { "version", "checksum", "generation", "success", "failedStep", "error",
				    "changedUnits", "restartId", "restartedUnits", "stoppedUnits", "unitsReady",
				    "inPlaceUpdate", "finishedAt", NULL };
static const char *const inplace_keys[] = { "kinds", "state", "reason", "osVersion", NULL };
static const char *const osversion_keys[] = { "desired", "running", NULL };
static const char *const ready_keys[] = { "status", "reason", "message", "checkedAt", NULL };

static int get_units(const cJSON *root, const char *key, char ***ret, const char **err)
{
	/* The messages are per key so that *err stays a static string. */
	static const struct { const char *key, *array, *string, *many; } msgs[] = {
		{ "changedUnits", "changedUnits: not an array", "changedUnits: not a string",
		  "changedUnits: more than RESULT_CHANGED_UNITS_MAX" },
		{ "restartedUnits", "restartedUnits: not an array", "restartedUnits: not a string",
		  "restartedUnits: more than RESULT_CHANGED_UNITS_MAX" },
		{ "stoppedUnits", "stoppedUnits: not an array", "stoppedUnits: not a string",
		  "stoppedUnits: more than RESULT_CHANGED_UNITS_MAX" },
	};
	size_t m = 0;
	while (strcmp(msgs[m].key, key) != 0)
		m++;
	const cJSON *units = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!units)
		return 0;
	if (!cJSON_IsArray(units))
		return jsonx_fail(err, msgs[m].array, -EINVAL);
	int k = jsonx_get_strv(units, RESULT_CHANGED_UNITS_MAX, ret);
	if (k == -EMSGSIZE)
		return jsonx_fail(err, msgs[m].many, k);
	if (k == -EINVAL)
		return jsonx_fail(err, msgs[m].string, k);
	if (k < 0)
		return jsonx_fail(err, "out of memory", k);
	return 0;
}

static int get_units_ready(const cJSON *root, struct result_units_ready *ret, const char **err)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "unitsReady");
	if (!o)
		return 0;
	const char *bad;
	if (!cJSON_IsObject(o) || jsonx_check_keys(o, ready_keys, &bad) < 0)
		return jsonx_fail(err, "unitsReady: not an object with status, reason, message, checkedAt", -EINVAL);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	const cJSON *re = cJSON_GetObjectItemCaseSensitive(o, "reason");
	const cJSON *me = cJSON_GetObjectItemCaseSensitive(o, "message");
	uint64_t t;
	if (!cJSON_IsString(st) || (strcmp(st->valuestring, "True") != 0 && strcmp(st->valuestring, "False") != 0))
		return jsonx_fail(err, "unitsReady.status: not \"True\" or \"False\"", -EINVAL);
	if (!cJSON_IsString(re) || !reason_is_valid(re->valuestring))
		return jsonx_fail(err, "unitsReady.reason: not 1..32 letters", -EINVAL);
	if (!cJSON_IsString(me))
		return jsonx_fail(err, "unitsReady.message: missing or not a string", -EINVAL);
	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(o, "checkedAt"), JSONX_UINT_MAX, &t))
		return jsonx_fail(err, "unitsReady.checkedAt: missing or not an unsigned integer below 2^53", -EINVAL);
	char *m = strdup(me->valuestring);
	if (!m)
		return jsonx_fail(err, "out of memory", -ENOMEM);
	ret->present = true;
	ret->ready = strcmp(st->valuestring, "True") == 0;
	memcpy(ret->reason, re->valuestring, strlen(re->valuestring) + 1);
	ret->message = m;
	ret->checked_at = (time_t)t;
	return 0;
}

static int get_inplace(const cJSON *root, struct result_inplace *ret, const char **err)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "inPlaceUpdate");
	if (!o)
		return 0;
	if (!cJSON_IsObject(o) || jsonx_check_keys(o, inplace_keys, NULL) < 0)
		return jsonx_fail(err, "inPlaceUpdate: not an object of kinds, state, reason, osVersion", -EINVAL);
	const cJSON *kinds = cJSON_GetObjectItemCaseSensitive(o, "kinds");
	if (!cJSON_IsArray(kinds) || cJSON_GetArraySize(kinds) > INPLACE_N_KINDS)
		return jsonx_fail(err, "inPlaceUpdate.kinds: missing, not an array or too long", -EINVAL);
	const cJSON *k;
	cJSON_ArrayForEach(k, kinds)
	{
		unsigned bit = cJSON_IsString(k) ? inplace_kind_from_name(k->valuestring) : 0;
		if (!bit || (ret->kinds & bit))
			return jsonx_fail(err, "inPlaceUpdate.kinds: unknown or duplicate kind", -EINVAL);
		ret->kinds |= bit;
	}
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "state");
	enum inplace_state s;
	if (!cJSON_IsString(st) || inplace_state_from_name(st->valuestring, &s) < 0)
		return jsonx_fail(err, "inPlaceUpdate.state: missing or unknown", -EINVAL);
	ret->state = (int)s;
	const cJSON *re = cJSON_GetObjectItemCaseSensitive(o, "reason");
	if (re) {
		if (!cJSON_IsString(re))
			return jsonx_fail(err, "inPlaceUpdate.reason: not a string", -EINVAL);
		if (!(ret->reason = strdup(re->valuestring)))
			return jsonx_fail(err, "out of memory", -ENOMEM);
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "osVersion");
	if (v) {
		if (!cJSON_IsObject(v) || jsonx_check_keys(v, osversion_keys, NULL) < 0)
			return jsonx_fail(err, "inPlaceUpdate.osVersion: not an object of desired and running", -EINVAL);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "desired");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(v, "running");
		if (!cJSON_IsString(d) || !cJSON_IsString(r))
			return jsonx_fail(err, "inPlaceUpdate.osVersion: desired or running missing or not a string", -EINVAL);
		if (!(ret->os_desired = strdup(d->valuestring)) || !(ret->os_running = strdup(r->valuestring)))
			return jsonx_fail(err, "out of memory", -ENOMEM);
	}
	ret->present = true;
	return 0;
}

static int opt_string(const cJSON *root, const char *key, char **ret, const char **err, const char *type_err)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!j)
		return 0;
	if (!cJSON_IsString(j))
		return jsonx_fail(err, type_err, -EINVAL);
	char *s = strdup(j->valuestring);
	if (!s)
		return jsonx_fail(err, "out of memory", -ENOMEM);
	*ret = s;
	return 0;
}

int result_parse(const char *data, size_t len, struct result *ret, const char **err)
{
	if (len > RESULT_MAX)
		return jsonx_fail(err, "document larger than RESULT_MAX", -EMSGSIZE);
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int k = jsonx_parse_document(data, len, keys, RESULT_VERSION, &root, err);
	if (k < 0)
		return k;

	_cleanup_(result_done) struct result r = {};
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "checksum");
	if (!cJSON_IsString(j))
		return jsonx_fail(err, "checksum: missing or not a string", -EINVAL);
	if (j->valuestring[0] != '\0' && !jsonx_is_sha256_hex(j->valuestring))
		return jsonx_fail(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	memcpy(r.checksum, j->valuestring, strlen(j->valuestring) + 1);

	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "generation"), JSONX_UINT_MAX, &r.generation))
		return jsonx_fail(err, "generation: missing or not an unsigned integer below 2^53", -EINVAL);
	uint64_t t;
	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "finishedAt"), JSONX_UINT_MAX, &t))
		return jsonx_fail(err, "finishedAt: missing or not an unsigned integer below 2^53", -EINVAL);
	r.finished_at = (time_t)t;
	j = cJSON_GetObjectItemCaseSensitive(root, "success");
	if (!cJSON_IsBool(j))
		return jsonx_fail(err, "success: missing or not a boolean", -EINVAL);
	r.success = cJSON_IsTrue(j);

	if ((k = opt_string(root, "failedStep", &r.failed_step, err, "failedStep: not a string")) < 0 ||
	    (k = opt_string(root, "error", &r.error, err, "error: not a string")) < 0 ||
	    (k = opt_string(root, "restartId", &r.restart_id, err, "restartId: not a string")) < 0)
		return k;
	if (r.error && !jsonx_is_line(r.error, RESULT_ERROR_MAX))
		return jsonx_fail(err, "error: longer than RESULT_ERROR_MAX or with control characters", -EINVAL);

	if ((k = get_units(root, "changedUnits", &r.changed_units, err)) < 0 ||
	    (k = get_units(root, "restartedUnits", &r.restarted_units, err)) < 0 ||
	    (k = get_units(root, "stoppedUnits", &r.stopped_units, err)) < 0 ||
	    (k = get_units_ready(root, &r.units_ready, err)) < 0 ||
	    (k = get_inplace(root, &r.inplace, err)) < 0)
		return k;

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
	strv_free(r->restarted_units);
	strv_free(r->stopped_units);
	free(r->units_ready.message);
	free(r->inplace.reason);
	free(r->inplace.os_desired);
	free(r->inplace.os_running);
	memset(r, 0, sizeof(*r));
}
