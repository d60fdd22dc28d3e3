/* The agent's Lease, pure helpers; see kubelease.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "kube.h"
#include "kubelease.h"

#define TIME_MAX 64

/* An optional string member: absent or null -> NULL. */
static int dup_string(const cJSON *obj, const char *key, size_t max, char **ret)
{
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return -EINVAL;
	if (strlen(v->valuestring) > max)
		return -EMSGSIZE;
	*ret = strdup(v->valuestring);
	return *ret ? 0 : -ENOMEM;
}

/* An optional object member: absent or null -> NULL. */
static int get_object(const cJSON *obj, const char *key, const cJSON **ret)
{
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The uid of the controller reference of kind Node, if any. */
static int owner_uid(const cJSON *meta, char **ret)
{
	const cJSON *refs = meta ? cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences") : NULL;
	*ret = NULL;
	if (!refs || cJSON_IsNull(refs))
		return 0;
	if (!cJSON_IsArray(refs))
		return -EINVAL;
	const cJSON *ref;
	cJSON_ArrayForEach(ref, refs) {
		if (!cJSON_IsObject(ref))
			return -EINVAL;
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
		const cJSON *ctl = cJSON_GetObjectItemCaseSensitive(ref, "controller");
		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Node") != 0 || !cJSON_IsTrue(ctl))
			continue;
		free(*ret);
		int r = dup_string(ref, "uid", KUBE_UID_MAX, ret);
		if (r < 0)
			return r;
	}
	return 0;
}

int kube_lease_parse(const char *data, size_t len, struct kube_lease *ret, const char **err)
{
	const char *end = NULL;
	_cleanup_(cJSON_Deletep) cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!j || !cJSON_IsObject(j))
		return jsonx_fail(err, "not a JSON object", -EINVAL);
	for (const char *p = end; p && p < data + len; p++)
		if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
			return jsonx_fail(err, "not a JSON object", -EINVAL);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	if (kind && (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Lease") != 0))
		return jsonx_fail(err, "kind", -EINVAL);

	struct kube_lease l = {};
	const cJSON *meta, *spec;
	int r;
	if ((r = get_object(j, "metadata", &meta)) < 0)
		return jsonx_fail(err, "metadata", r);
	if ((r = get_object(j, "spec", &spec)) < 0)
		return jsonx_fail(err, "spec", r);
	const char *what = NULL;
	if ((r = dup_string(meta, "name", KUBE_NAME_MAX, &l.name)) < 0)
		what = "metadata.name";
	else if ((r = dup_string(meta, "resourceVersion", KUBE_RV_MAX, &l.resource_version)) < 0)
		what = "metadata.resourceVersion";
	/* It goes into the next request's body only, but the same character
	 * set as kube.c's keeps it boring. */
	else if (l.resource_version &&
		 l.resource_version[strspn(l.resource_version, "0123456789abcdefghijklmnopqrstuvwxyz"
							       "ABCDEFGHIJKLMNOPQRSTUVWXYZ._~-")])
		r = -EINVAL, what = "metadata.resourceVersion";
	else if ((r = owner_uid(meta, &l.owner_uid)) < 0)
		what = "metadata.ownerReferences";
	else if ((r = dup_string(spec, "holderIdentity", KUBE_NAME_MAX, &l.holder)) < 0)
		what = "spec.holderIdentity";
	else if ((r = dup_string(spec, "renewTime", TIME_MAX, &l.renew_time)) < 0)
		what = "spec.renewTime";
	if (!what && spec) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
		if (d && !cJSON_IsNull(d)) {
			/* An int32 in the API. */
			if (!cJSON_IsNumber(d) || !isfinite(d->valuedouble) || d->valuedouble < -2147483648.0 ||
			    d->valuedouble > 2147483647.0 || d->valuedouble != (double)(int64_t)d->valuedouble)
				r = -EINVAL, what = "spec.leaseDurationSeconds";
			else {
				l.has_duration = true;
				l.duration_s = (int64_t)d->valuedouble;
			}
		}
	}
	if (what) {
		kube_lease_done(&l);
		return jsonx_fail(err, what, r);
	}
	*ret = l;
	return 0;
}

void kube_lease_done(struct kube_lease *l)
{
	free(l->name);
	free(l->resource_version);
	free(l->holder);
	free(l->renew_time);
	free(l->owner_uid);
	*l = (struct kube_lease){};
}

int kube_microtime(const struct timespec *t, char out[static KUBE_MICROTIME_LEN])
{
	struct tm tm;
	if (!gmtime_r(&t->tv_sec, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900 || t->tv_nsec < 0 ||
	    t->tv_nsec >= 1000000000L)
		return -EINVAL;
	int n = snprintf(out, KUBE_MICROTIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t->tv_nsec / 1000L);
	return n == KUBE_MICROTIME_LEN - 1 ? 0 : -EINVAL;
}

int kube_lease_name(const char *node_name, char *out, size_t outlen)
{
	size_t n = strlen(KUBE_LEASE_PREFIX) + strlen(node_name);
	if (n > KUBE_NAME_MAX || n >= outlen)
		return -ENAMETOOLONG;
	snprintf(out, outlen, "%s%s", KUBE_LEASE_PREFIX, node_name);
	return 0;
}

/* metadata.ownerReferences with the one controller reference to the v1
 * object kind/name/uid (controller and blockOwnerDeletion set, as
 * metav1.NewControllerRef()). */
static bool add_controller_ref(cJSON *meta, const char *kind, const char *name, const char *uid)
{
	cJSON *refs = cJSON_AddArrayToObject(meta, "ownerReferences");
	cJSON *ref = cJSON_CreateObject();
	if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(ref);
		return false;
	}
	return cJSON_AddStringToObject(ref, "apiVersion", "v1") && cJSON_AddStringToObject(ref, "kind", kind) &&
	       cJSON_AddStringToObject(ref, "name", name) && cJSON_AddStringToObject(ref, "uid", uid) &&
	       cJSON_AddTrueToObject(ref, "controller") && cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
}

/* The frame of a Lease body: on create (POST) apiVersion, kind and
 * metadata.name/namespace; on update (merge patch) metadata.resourceVersion
 * when rv is given. *meta is the metadata object, for the caller to add to. */
static cJSON *lease_frame(bool create, const char *ns, const char *name, const char *rv, cJSON **meta)
{
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	if (create && (!cJSON_AddStringToObject(root, "apiVersion", "coordination.k8s.io/v1") ||
		       !cJSON_AddStringToObject(root, "kind", "Lease")))
		return NULL;
	*meta = cJSON_AddObjectToObject(root, "metadata");
	if (!*meta)
		return NULL;
	if (create && (!cJSON_AddStringToObject(*meta, "name", name) || !cJSON_AddStringToObject(*meta, "namespace", ns)))
		return NULL;
	if (!create && rv && !cJSON_AddStringToObject(*meta, "resourceVersion", rv))
		return NULL;
	return TAKE_PTR(root);
}

char *kube_lease_body(bool create, const char *name, const char *node_name, const char *node_uid, const char *rv,
		      const char *renew_time)
{
	cJSON *meta;
	_cleanup_(cJSON_Deletep) cJSON *root = lease_frame(create, KUBE_LEASE_NAMESPACE, name, rv, &meta);
	if (!root)
		return NULL;
	/* controllerutil.SetControllerReference(). A merge patch replaces
	 * the list whole. */
	if (!add_controller_ref(meta, "Node", node_name, node_uid))
		return NULL;
	cJSON *spec = cJSON_AddObjectToObject(root, "spec");
	if (!spec || !cJSON_AddStringToObject(spec, "holderIdentity", name) ||
	    !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", KUBE_LEASE_DURATION_S) ||
	    !cJSON_AddStringToObject(spec, "renewTime", renew_time))
		return NULL;
	if (!create && (!cJSON_AddNullToObject(spec, "acquireTime") || !cJSON_AddNullToObject(spec, "leaseTransitions")))
		return NULL;
	return cJSON_PrintUnformatted(root);
}

/* Parses obj for an update: a Lease object with metadata.resourceVersion,
 * returned with apiVersion and kind set and metadata.managedFields gone.
 * *meta and *spec are its metadata and spec (spec created when absent). */
/* At most 64 members, none twice: a Lease's top level, metadata and spec
 * have about ten. A key given twice would be replaced once and sent twice,
 * and the API server reads the last of them where kube_lease_parse() reads
 * the first. */
static bool members_ok(const cJSON *o)
{
	size_t n = 0;
	for (const cJSON *a = o ? o->child : NULL; a; a = a->next) {
		if (++n > 64)
			return false;
		for (const cJSON *b = a->next; b; b = b->next)
			if (a->string && b->string && strcmp(a->string, b->string) == 0)
				return false;
	}
	return true;
}

static int update_frame(const char *obj, size_t len, cJSON **ret, cJSON **meta, cJSON **spec, const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *root = jsonx_parse(obj ? obj : "", obj ? len : 0);
	if (!root || !cJSON_IsObject(root))
		return jsonx_fail(err, "not a JSON object", -EINVAL);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
	if (kind && (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Lease") != 0))
		return jsonx_fail(err, "kind", -EINVAL);
	*meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	if (!cJSON_IsObject(*meta))
		return jsonx_fail(err, "metadata", -EINVAL);
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(*meta, "resourceVersion");
	if (!cJSON_IsString(rv) || !*rv->valuestring || strlen(rv->valuestring) > KUBE_RV_MAX)
		return jsonx_fail(err, "metadata.resourceVersion", -EINVAL);
	*spec = cJSON_GetObjectItemCaseSensitive(root, "spec");
	if (*spec && !cJSON_IsNull(*spec) && !cJSON_IsObject(*spec))
		return jsonx_fail(err, "spec", -EINVAL);
	if (!members_ok(root) || !members_ok(*meta) || (cJSON_IsObject(*spec) && !members_ok(*spec)))
		return jsonx_fail(err, "a key twice, or over 64 keys, in the Lease, its metadata or its spec", -EINVAL);
	cJSON_DeleteItemFromObjectCaseSensitive(*meta, "managedFields");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "apiVersion");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "kind");
	if (!cJSON_AddStringToObject(root, "apiVersion", "coordination.k8s.io/v1") ||
	    !cJSON_AddStringToObject(root, "kind", "Lease"))
		return -ENOMEM;
	if (!cJSON_IsObject(*spec)) {
		cJSON_DeleteItemFromObjectCaseSensitive(root, "spec");
		*spec = cJSON_AddObjectToObject(root, "spec");
		if (!*spec)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(root);
	return 0;
}

static int print_update(cJSON *root, char **ret)
{
	*ret = cJSON_PrintUnformatted(root);
	return *ret ? 0 : -ENOMEM;
}

/* Sets member key of obj to item (replacing it); item is consumed. */
static bool set_item(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return false;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

int kube_lease_update_body(const char *obj, size_t len, const char *name, const char *node_name, const char *node_uid,
			   const char *renew_time, char **ret, const char **err)
{
	cJSON *meta, *spec;
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int r = update_frame(obj, len, &root, &meta, &spec, err);
	if (r < 0)
		return r;
	/* The references kept: those neither controller nor to a Node. */
	_cleanup_(cJSON_Deletep) cJSON *refs = cJSON_DetachItemFromObjectCaseSensitive(meta, "ownerReferences");
	if (refs && !cJSON_IsNull(refs) && !cJSON_IsArray(refs))
		return jsonx_fail(err, "metadata.ownerReferences", -EINVAL);
	if (!add_controller_ref(meta, "Node", node_name, node_uid))
		return -ENOMEM;
	cJSON *mine = cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences");
	const cJSON *ref, *list = cJSON_IsArray(refs) ? refs : NULL;
	cJSON_ArrayForEach(ref, list) {
		if (!cJSON_IsObject(ref))
			return jsonx_fail(err, "metadata.ownerReferences", -EINVAL);
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")) ||
		    (cJSON_IsString(kind) && strcmp(kind->valuestring, "Node") == 0))
			continue;
		cJSON *dup = cJSON_Duplicate(ref, true);
		if (!dup || !cJSON_AddItemToArray(mine, dup)) {
			cJSON_Delete(dup);
			return -ENOMEM;
		}
	}
	/* lease.Spec = coordinationv1.LeaseSpec{...}: the whole spec. */
	cJSON *nspec = cJSON_CreateObject();
	if (!set_item(root, "spec", nspec) || !cJSON_AddStringToObject(nspec, "holderIdentity", name) ||
	    !cJSON_AddNumberToObject(nspec, "leaseDurationSeconds", KUBE_LEASE_DURATION_S) ||
	    !cJSON_AddStringToObject(nspec, "renewTime", renew_time))
		return -ENOMEM;
	(void)spec;
	return print_update(root, ret);
}

int kube_serial_lease_update_body(const char *obj, size_t len, const char *holder, const char *acquire_time,
				  const char *renew_time, char **ret, const char **err)
{
	cJSON *meta, *spec;
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int r = update_frame(obj, len, &root, &meta, &spec, err);
	if (r < 0)
		return r;
	if (!holder) {
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
		return print_update(root, ret);
	}
	if (acquire_time) {
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
		double n = cJSON_IsNumber(t) && isfinite(t->valuedouble) && t->valuedouble >= 0 &&
					   t->valuedouble < 2147483647.0
				   ? (double)(int64_t)t->valuedouble
				   : 0;
		if (cJSON_IsString(h) && *h->valuestring && strcmp(h->valuestring, holder) != 0 &&
		    !set_item(spec, "leaseTransitions", cJSON_CreateNumber(n + 1)))
			return -ENOMEM;
		if (!set_item(spec, "holderIdentity", cJSON_CreateString(holder)) ||
		    !set_item(spec, "leaseDurationSeconds", cJSON_CreateNumber(KUBE_SERIAL_LEASE_DURATION_S)) ||
		    !set_item(spec, "acquireTime", cJSON_CreateString(acquire_time)))
			return -ENOMEM;
	}
	if (!set_item(spec, "renewTime", cJSON_CreateString(renew_time)))
		return -ENOMEM;
	return print_update(root, ret);
}

/* ---- the serial rollout Lease --------------------------------------------- */

static bool parse_digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		v = v * 10 + (**p - '0');
	}
	*ret = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil, in 64 bits). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int kube_microtime_parse(const char *s, struct timespec *ret)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec;
	const char *p = s;
	if (!s || strlen(s) > TIME_MAX || !parse_digits(&p, 4, &y) || *p++ != '-' || !parse_digits(&p, 2, &mo) ||
	    *p++ != '-' || !parse_digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
		return -EINVAL;
	p++;
	if (!parse_digits(&p, 2, &h) || *p++ != ':' || !parse_digits(&p, 2, &mi) || *p++ != ':' ||
	    !parse_digits(&p, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) ||
	    h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	long nsec = 0;
	if (*p == '.') {
		p++;
		int n = 0;
		long scale = 100000000L;
		for (; *p >= '0' && *p <= '9'; p++, n++) {
			if (n >= 9)
				return -EINVAL;
			nsec += (long)(*p - '0') * scale;
			scale /= 10;
		}
		if (n == 0)
			return -EINVAL;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om;
		if (!parse_digits(&p, 2, &oh) || *p++ != ':' || !parse_digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		off = sign * (int64_t)(oh * 3600 + om * 60);
	} else
		return -EINVAL;
	if (*p)
		return -EINVAL;
	int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
	if ((int64_t)(time_t)t != t)
		return -EINVAL;
	*ret = (struct timespec){ .tv_sec = (time_t)t, .tv_nsec = nsec };
	return 0;
}

int kube_serial_judge(const struct kube_lease *l, const char *me, const struct timespec *now, uint64_t *ret_left_ms)
{
	*ret_left_ms = 0;
	if (!l->holder || !*l->holder)
		return KUBE_SERIAL_FREE;
	if (strcmp(l->holder, me) == 0)
		return KUBE_SERIAL_MINE;
	/* renewedInTime(): a negative duration or no renewTime is not. */
	int64_t dur = l->has_duration ? l->duration_s : 0;
	if (dur < 0 || !l->renew_time)
		return KUBE_SERIAL_EXPIRED;
	struct timespec rt;
	if (kube_microtime_parse(l->renew_time, &rt) < 0)
		return -EINVAL;
	/* In ms, with the seconds clamped so nothing overflows. */
	int64_t rs = rt.tv_sec, ns = now->tv_sec;
	if (rs > ns + 10 * 365 * 86400ll)
		rs = ns + 10 * 365 * 86400ll;
	if (rs < ns - 10 * 365 * 86400ll)
		return KUBE_SERIAL_EXPIRED;
	int64_t end_ms = (rs + dur) * 1000 + rt.tv_nsec / 1000000;
	int64_t now_ms = ns * 1000 + now->tv_nsec / 1000000;
	if (end_ms <= now_ms)
		return KUBE_SERIAL_EXPIRED;
	*ret_left_ms = (uint64_t)(end_ms - now_ms);
	return KUBE_SERIAL_TAKEN;
}

char *kube_serial_lease_body(bool create, const char *ns, const char *name, const char *secret_uid, const char *rv,
			     const char *holder, const char *acquire_time, const char *renew_time)
{
	cJSON *meta;
	_cleanup_(cJSON_Deletep) cJSON *root = lease_frame(create, ns, name, rv, &meta);
	if (!root)
		return NULL;
	/* metav1.NewControllerRef(secret, Secret): controller and
	 * blockOwnerDeletion set. Without the Secret's uid there is no valid
	 * reference: none is sent. */
	if (create && secret_uid && *secret_uid && !add_controller_ref(meta, "Secret", name, secret_uid))
		return NULL;
	cJSON *spec = cJSON_AddObjectToObject(root, "spec");
	if (!spec)
		return NULL;
	if (!holder) {
		if (!cJSON_AddNullToObject(spec, "holderIdentity") || !cJSON_AddNullToObject(spec, "leaseDurationSeconds") ||
		    !cJSON_AddNullToObject(spec, "acquireTime") || !cJSON_AddNullToObject(spec, "renewTime"))
			return NULL;
		return cJSON_PrintUnformatted(root);
	}
	if (acquire_time && (!cJSON_AddStringToObject(spec, "holderIdentity", holder) ||
			     !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", KUBE_SERIAL_LEASE_DURATION_S) ||
			     !cJSON_AddStringToObject(spec, "acquireTime", acquire_time)))
		return NULL;
	if (!cJSON_AddStringToObject(spec, "renewTime", renew_time))
		return NULL;
	return cJSON_PrintUnformatted(root);
}
