/* Kubernetes JSON for node-agent; see kube.h. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "jsonx.h"
#include "kube.h"

/* Parses exactly one JSON object of len bytes (trailing whitespace allowed). */
static int parse_object(const char *data, size_t len, cJSON **ret)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!j)
		return -EINVAL;
	for (const char *p = end; p && p < data + len; p++)
		if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
			cJSON_Delete(j);
			return -EINVAL;
		}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return -EINVAL;
	}
	*ret = j;
	return 0;
}

/* Copies an optional string member. Absent or null: *ret = NULL. A value of
 * another type is -EINVAL; longer than max: -EMSGSIZE. */
static int dup_string(const cJSON *obj, const char *key, size_t max, char **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*ret = NULL;
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return -EINVAL;
	if (strlen(v->valuestring) > max)
		return -EMSGSIZE;
	char *s = strdup(v->valuestring);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

/* An optional member that must be an object when present. */
static int get_object(const cJSON *obj, const char *key, const cJSON **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*ret = NULL;
		return 0;
	}
	if (!cJSON_IsObject(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int check_kind(const cJSON *obj, const char *kind)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	/* Watch events of a typed watch always carry kind; a missing kind is
	 * tolerated (the test server may omit it), a different one is not. */
	if (!k)
		return 0;
	if (!cJSON_IsString(k) || strcmp(k->valuestring, kind) != 0)
		return -EINVAL;
	return 0;
}

/* ---- Status ---------------------------------------------------------------- */

static int status_from_json(const cJSON *obj, struct kube_status *ret)
{
	struct kube_status s = {};
	int r;
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	if (!cJSON_IsString(k) || strcmp(k->valuestring, "Status") != 0)
		return -EINVAL;
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
	if (code) {
		if (!cJSON_IsNumber(code) || code->valuedouble < 0 || code->valuedouble > 999)
			return -EINVAL;
		s.code = (int)code->valuedouble;
	}
	if ((r = dup_string(obj, "reason", 1024, &s.reason)) < 0)
		return r;
	if ((r = dup_string(obj, "message", 4096, &s.message)) < 0) {
		kube_status_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

int kube_status_parse(const char *data, size_t len, struct kube_status *ret)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r = parse_object(data, len, &j);
	if (r < 0)
		return r;
	return status_from_json(j, ret);
}

void kube_status_done(struct kube_status *s)
{
	free(s->reason);
	free(s->message);
	*s = (struct kube_status){};
}

/* ---- metadata ---------------------------------------------------------------- */

static int metadata_common(const cJSON *obj, const cJSON **ret_meta, char **ret_name, char **ret_rv,
			   const char **err)
{
	const cJSON *meta;
	int r = get_object(obj, "metadata", &meta);
	if (r < 0)
		return jsonx_fail(err, "metadata", r);
	_cleanup_free_ char *name = NULL, *rv = NULL;
	if (meta) {
		if ((r = dup_string(meta, "name", KUBE_NAME_MAX, &name)) < 0)
			return jsonx_fail(err, "metadata.name", r);
		if ((r = dup_string(meta, "resourceVersion", KUBE_RV_MAX, &rv)) < 0)
			return jsonx_fail(err, "metadata.resourceVersion", r);
		/* Opaque to clients, but it goes into watch URLs and restart
		 * request ids unescaped: etcd revisions are decimal, so URL-safe
		 * characters are plenty. */
		if (rv && rv[strspn(rv, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._~-")])
			return jsonx_fail(err, "metadata.resourceVersion", -EINVAL);
	}
	*ret_meta = meta;
	*ret_name = TAKE_PTR(name);
	*ret_rv = TAKE_PTR(rv);
	return 0;
}

/* Looks up key in metadata.<map> (annotations or labels). */
static int map_value(const cJSON *meta, const char *map, const char *key, char **ret)
{
	const cJSON *m = NULL;
	if (meta) {
		int r = get_object(meta, map, &m);
		if (r < 0)
			return r;
	}
	if (!m) {
		*ret = NULL;
		return 0;
	}
	return dup_string(m, key, KUBE_VALUE_MAX, ret);
}

/* ---- Secret -------------------------------------------------------------- */

static int secret_from_json(const cJSON *obj, size_t max_osc, struct kube_secret *ret, const char **err)
{
	struct kube_secret s = {};
	const cJSON *meta;
	int r;

	if (check_kind(obj, "Secret") < 0)
		return jsonx_fail(err, "kind", -EINVAL);
	r = metadata_common(obj, &meta, &s.name, &s.resource_version, err);
	if (r < 0)
		return r;
	r = map_value(meta, "annotations", KUBE_ANN_SECRET_CHECKSUM, &s.checksum);
	if (r < 0) {
		jsonx_fail(err, "metadata.annotations[checksum/data-script]", r);
		goto fail;
	}
	if (meta && (r = dup_string(meta, "uid", 128, &s.uid)) < 0) {
		jsonx_fail(err, "metadata.uid", r);
		goto fail;
	}
	/* gardener-node-agent's serialReconciliation(): exactly "true"
	 * (pkg/nodeagent/controller/operatingsystemconfig/serial.go). */
	char *serial = NULL;
	r = map_value(meta, "annotations", KUBE_ANN_SERIAL, &serial);
	if (r < 0) {
		jsonx_fail(err, "metadata.annotations[" KUBE_ANN_SERIAL "]", r);
		goto fail;
	}
	s.serial = serial && strcmp(serial, "true") == 0;
	free(serial);
	const cJSON *data;
	r = get_object(obj, "data", &data);
	if (r < 0) {
		jsonx_fail(err, "data", r);
		goto fail;
	}
	const cJSON *v = data ? cJSON_GetObjectItemCaseSensitive(data, KUBE_SECRET_DATA_KEY) : NULL;
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) || !v->valuestring) {
			r = jsonx_fail(err, "data[osc.yaml]", -EINVAL);
			goto fail;
		}
		r = b64_decode(v->valuestring, strlen(v->valuestring), max_osc, 0, &s.osc, &s.osc_len);
		if (r < 0) {
			jsonx_fail(err, "data[osc.yaml]", r);
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	kube_secret_done(&s);
	return r;
}

int kube_secret_parse(const char *data, size_t len, size_t max_osc, struct kube_secret *ret,
		      const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r = parse_object(data, len, &j);
	if (r < 0)
		return jsonx_fail(err, "not a JSON object", r);
	return secret_from_json(j, max_osc, ret, err);
}

void kube_secret_done(struct kube_secret *s)
{
	free(s->name);
	free(s->resource_version);
	free(s->checksum);
	free(s->uid);
	free(s->osc);
	*s = (struct kube_secret){};
}

int kube_secret_verify(const struct kube_secret *s, char sum[static 65])
{
	sum[0] = '\0';
	if (!s->checksum || !s->osc)
		return -ENODATA;
	unsigned char md[32];
	unsigned int mdlen = 0;
	if (EVP_Digest(s->osc, s->osc_len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != sizeof(md))
		return -EIO;
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof(md); i++) {
		sum[2 * i] = hex[md[i] >> 4];
		sum[2 * i + 1] = hex[md[i] & 15];
	}
	sum[64] = '\0';
	if (strlen(s->checksum) != 64 || CRYPTO_memcmp(sum, s->checksum, 64) != 0)
		return -EBADMSG;
	return 0;
}

/* ---- Node ---------------------------------------------------------------- */

/* Our condition from status.conditions, leniently (see kube.h). */
static int node_units_ready(const cJSON *obj, struct kube_node *n)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	const cJSON *conds = cJSON_IsObject(status) ? cJSON_GetObjectItemCaseSensitive(status, "conditions") : NULL;
	if (!cJSON_IsArray(conds))
		return 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, conds) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
		if (!cJSON_IsString(t) || strcmp(t->valuestring, KUBE_CONDITION_SYSTEMD_UNITS_READY) != 0)
			continue;
		char *v[4] = {};
		static const char *const keys[4] = { "status", "reason", "message", "lastTransitionTime" };
		int r = 0;
		for (size_t i = 0; r >= 0 && i < 4; i++) {
			r = dup_string(c, keys[i], KUBE_CONDITION_MESSAGE_MAX, &v[i]);
			if (r >= 0 && !v[i])
				r = -EINVAL;
		}
		if (r < 0) {
			for (size_t i = 0; i < 4; i++)
				free(v[i]);
			return r == -ENOMEM ? r : 0;
		}
		n->units_ready_status = v[0];
		n->units_ready_reason = v[1];
		n->units_ready_message = v[2];
		n->units_ready_transition = v[3];
		return 0;
	}
	return 0;
}

/* The Ready condition as the kubelet reports it (gardener/gardener
 * pkg/nodeagent/controller/healthcheck/kubelet.go isNodeReady). Lenient: the
 * Node's status is the kubelet's, and a malformed one must not cost the
 * agent its Node; it reads as "no condition". */
static int node_ready(const cJSON *obj)
{
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
							      "conditions");
	const cJSON *c;
	if (!cJSON_IsArray(conds))
		return -1;
	cJSON_ArrayForEach(c, conds)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
		const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
		if (cJSON_IsString(type) && type->valuestring && strcmp(type->valuestring, "Ready") == 0)
			return cJSON_IsString(status) && status->valuestring && strcmp(status->valuestring, "True") == 0;
	}
	return -1;
}

/* The InPlaceUpdate condition with the reason ReadyForUpdate (gardener/
 * gardener pkg/nodeagent/controller/operatingsystemconfig/add.go
 * nodeHasInPlaceUpdateConditionWithReasonReadyForUpdate: any condition of
 * that type and reason, its status not looked at). Lenient, as for Ready. */
static bool node_ready_for_update(const cJSON *obj)
{
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
							      "conditions");
	const cJSON *c;
	if (!cJSON_IsArray(conds))
		return false;
	cJSON_ArrayForEach(c, conds)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(c, "reason");
		if (cJSON_IsString(type) && type->valuestring &&
		    strcmp(type->valuestring, KUBE_CONDITION_IN_PLACE_UPDATE) == 0 && cJSON_IsString(reason) &&
		    reason->valuestring && strcmp(reason->valuestring, KUBE_REASON_READY_FOR_UPDATE) == 0)
			return true;
	}
	return false;
}

/* status.addresses (see kube.h). */
static void node_addresses(const cJSON *obj, struct kube_node *n)
{
	const cJSON *addrs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
							      "addresses");
	const cJSON *a;
	if (!cJSON_IsArray(addrs))
		return;
	cJSON_ArrayForEach(a, addrs)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(a, "type");
		const cJSON *addr = cJSON_GetObjectItemCaseSensitive(a, "address");
		if (!cJSON_IsString(type) || !type->valuestring || !cJSON_IsString(addr) || !addr->valuestring ||
		    !addr->valuestring[0])
			continue;
		bool internal = strcmp(type->valuestring, "InternalIP") == 0;
		if (!internal && strcmp(type->valuestring, "ExternalIP") != 0)
			continue;
		n->has_address = true;
		if (!internal)
			continue;
		n->internal_ip[0] = '\0';
		unsigned char bin[sizeof(struct in6_addr)];
		int af = inet_pton(AF_INET, addr->valuestring, bin) == 1	? AF_INET
			 : inet_pton(AF_INET6, addr->valuestring, bin) == 1 ? AF_INET6
									    : 0;
		if (af)
			inet_ntop(af, bin, n->internal_ip, sizeof(n->internal_ip));
	}
}

static int node_from_json(const cJSON *obj, struct kube_node *ret, const char **err)
{
	struct kube_node n = { .ready = node_ready(obj), .ready_for_update = node_ready_for_update(obj) };
	node_addresses(obj, &n);
	const cJSON *meta;
	int r;

	if (check_kind(obj, "Node") < 0)
		return jsonx_fail(err, "kind", -EINVAL);
	r = metadata_common(obj, &meta, &n.name, &n.resource_version, err);
	if (r < 0)
		return r;
	/* A UUID; it goes into the Lease's ownerReferences. */
	if (meta && (r = dup_string(meta, "uid", 128, &n.uid)) < 0) {
		kube_node_done(&n);
		return jsonx_fail(err, "metadata.uid", r);
	}
	static const struct {
		const char *map, *key, *what;
		size_t offset;
	} wanted[] = {
		{ "annotations", KUBE_ANN_NODE_CHECKSUM, "metadata.annotations[checksum/cloud-config-data]",
		  offsetof(struct kube_node, applied_checksum) },
		{ "annotations", KUBE_ANN_RESTART, "metadata.annotations[restart-systemd-services]",
		  offsetof(struct kube_node, restart_services) },
		{ "annotations", KUBE_ANN_AUTHORIZED_KEYS, "metadata.annotations[authorized-keys]",
		  offsetof(struct kube_node, authorized_keys) },
		{ "annotations", KUBE_ANN_SSH_HOST_KEYS, "metadata.annotations[ssh-host-keys]",
		  offsetof(struct kube_node, ssh_host_keys) },
		{ "labels", KUBE_LABEL_SECRET_NAME, "metadata.labels[gardener-node-agent-secret-name]",
		  offsetof(struct kube_node, secret_name_label) },
		{ "labels", KUBE_LABEL_K8S_VERSION, "metadata.labels[kubernetes-version]",
		  offsetof(struct kube_node, kubernetes_version) },
		{ "labels", KUBE_LABEL_WORKER_ROLE, "metadata.labels[node-role.kubernetes.io/worker]",
		  offsetof(struct kube_node, worker_role) },
		{ "labels", KUBE_LABEL_ZONE, "metadata.labels[topology.kubernetes.io/zone]",
		  offsetof(struct kube_node, zone) },
		{ "annotations", KUBE_ANN_RECONCILIATION_DELAY, "metadata.annotations[reconciliation-delay]",
		  offsetof(struct kube_node, reconciliation_delay) },
		{ "labels", KUBE_LABEL_UPDATE_RESULT, "metadata.labels[node.machine.sapcloud.io/update-result]",
		  offsetof(struct kube_node, update_result) },
		{ "annotations", KUBE_ANN_UPDATE_FAILED_REASON,
		  "metadata.annotations[node.machine.sapcloud.io/update-failed-reason]",
		  offsetof(struct kube_node, update_failed_reason) },
		{ "annotations", KUBE_ANN_UPDATING_OS_VERSION,
		  "metadata.annotations[node-agent.gardener.cloud/updating-operating-system-version]",
		  offsetof(struct kube_node, updating_os_version) },
	};
	for (size_t i = 0; i < ELEMENTSOF(wanted); i++) {
		r = map_value(meta, wanted[i].map, wanted[i].key, (char **)((char *)&n + wanted[i].offset));
		if (r < 0) {
			jsonx_fail(err, wanted[i].what, r);
			kube_node_done(&n);
			return r;
		}
	}
	if ((r = node_units_ready(obj, &n)) < 0) {
		kube_node_done(&n);
		return jsonx_fail(err, "status.conditions", r);
	}
	*ret = n;
	return 0;
}

int kube_node_parse(const char *data, size_t len, struct kube_node *ret, const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r = parse_object(data, len, &j);
	if (r < 0)
		return jsonx_fail(err, "not a JSON object", r);
	return node_from_json(j, ret, err);
}

void kube_node_done(struct kube_node *n)
{
	free(n->name);
	free(n->resource_version);
	free(n->uid);
	free(n->applied_checksum);
	free(n->restart_services);
	free(n->authorized_keys);
	free(n->ssh_host_keys);
	free(n->secret_name_label);
	free(n->kubernetes_version);
	free(n->worker_role);
	free(n->zone);
	free(n->reconciliation_delay);
	free(n->units_ready_status);
	free(n->units_ready_reason);
	free(n->units_ready_message);
	free(n->units_ready_transition);
	free(n->update_result);
	free(n->update_failed_reason);
	free(n->updating_os_version);
	*n = (struct kube_node){};
}

/* ---- watch events -------------------------------------------------------- */

static const char *const event_types[] = {
	[KUBE_EVENT_ADDED] = "ADDED",
	[KUBE_EVENT_MODIFIED] = "MODIFIED",
	[KUBE_EVENT_DELETED] = "DELETED",
	[KUBE_EVENT_BOOKMARK] = "BOOKMARK",
	[KUBE_EVENT_ERROR] = "ERROR",
};

int kube_event_parse(const char *line, size_t len, enum kube_kind kind, size_t max_osc,
		     struct kube_event *ret, const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r = parse_object(line, len, &j);
	if (r < 0)
		return jsonx_fail(err, "not a JSON object", r);

	const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
	if (!cJSON_IsString(type))
		return jsonx_fail(err, "type", -EINVAL);
	struct kube_event e = { .type = (enum kube_event_type)-1 };
	for (size_t i = 0; i < ELEMENTSOF(event_types); i++)
		if (strcmp(type->valuestring, event_types[i]) == 0)
			e.type = (enum kube_event_type)i;
	if ((int)e.type < 0)
		return jsonx_fail(err, "type", -EINVAL);

	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(j, "object");
	if (!cJSON_IsObject(obj))
		return jsonx_fail(err, "object", -EINVAL);

	switch (e.type) {
	case KUBE_EVENT_ERROR:
		r = status_from_json(obj, &e.status);
		if (r < 0)
			return jsonx_fail(err, "object (Status)", r);
		break;
	case KUBE_EVENT_BOOKMARK: {
		const char *want = kind == KUBE_KIND_SECRET ? "Secret" : "Node";
		if (check_kind(obj, want) < 0)
			return jsonx_fail(err, "object.kind", -EINVAL);
		const cJSON *meta;
		_cleanup_free_ char *name = NULL;
		r = metadata_common(obj, &meta, &name, &e.resource_version, err);
		if (r < 0)
			return r;
		if (!e.resource_version)
			return jsonx_fail(err, "object.metadata.resourceVersion", -EINVAL);
		break;
	}
	default:
		if (kind == KUBE_KIND_SECRET) {
			r = secret_from_json(obj, max_osc, &e.secret, err);
			if (r < 0)
				return r;
			if (e.secret.resource_version && !(e.resource_version = strdup(e.secret.resource_version))) {
				kube_event_done(&e);
				return -ENOMEM;
			}
		} else {
			r = node_from_json(obj, &e.node, err);
			if (r < 0)
				return r;
			if (e.node.resource_version && !(e.resource_version = strdup(e.node.resource_version))) {
				kube_event_done(&e);
				return -ENOMEM;
			}
		}
		if (!e.resource_version) {
			kube_event_done(&e);
			return jsonx_fail(err, "object.metadata.resourceVersion", -EINVAL);
		}
	}
	*ret = e;
	return 0;
}

void kube_event_done(struct kube_event *e)
{
	free(e->resource_version);
	kube_secret_done(&e->secret);
	kube_node_done(&e->node);
	kube_status_done(&e->status);
	*e = (struct kube_event){};
}

/* ---- stream splitter ----------------------------------------------------- */

void kube_splitter_init(struct kube_splitter *s, size_t max_line)
{
	*s = (struct kube_splitter){ .max_line = max_line };
}

static int emit(struct kube_splitter *s, const char *line, size_t len, kube_line_cb cb, void *userdata)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	s->lines++;
	return cb(line, len, userdata);
}

int kube_splitter_feed(struct kube_splitter *s, const char *data, size_t len, kube_line_cb cb,
		       void *userdata)
{
	int r;
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;

		if (s->len + take > s->max_line)
			return -EMSGSIZE;
		if (nl && s->len == 0) {
			/* Whole line inside this chunk: no copy. */
			r = emit(s, data, take, cb, userdata);
		} else {
			if (s->len + take > s->cap) {
				size_t cap = s->cap ? s->cap : 4096;
				while (cap < s->len + take)
					cap *= 2;
				if (cap > s->max_line)
					cap = s->max_line;
				char *b = realloc(s->buf, cap);
				if (!b)
					return -ENOMEM;
				s->buf = b;
				s->cap = cap;
			}
			if (take > 0)
				memcpy(s->buf + s->len, data, take);
			s->len += take;
			r = 0;
			if (nl) {
				r = emit(s, s->buf, s->len, cb, userdata);
				s->len = 0;
			}
		}
		if (r < 0)
			return r;
		if (!nl)
			break;
		data = nl + 1;
		len -= take + 1;
	}
	return 0;
}

size_t kube_splitter_pending(const struct kube_splitter *s)
{
	return s->len;
}

void kube_splitter_reset(struct kube_splitter *s)
{
	s->len = 0;
}

void kube_splitter_done(struct kube_splitter *s)
{
	free(s->buf);
	*s = (struct kube_splitter){};
}

/* ---- names and patches ---------------------------------------------------- */

bool kube_name_is_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > KUBE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '-' && c != '.')
			return false;
		if (!alnum && (i == 0 || i == n - 1))
			return false;
	}
	return true;
}

static int add_map(cJSON *meta, const char *name, const struct kube_patch_entry *e, size_t n)
{
	if (n == 0)
		return 0;
	cJSON *m = cJSON_AddObjectToObject(meta, name);
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cJSON *v = e[i].value ? cJSON_AddStringToObject(m, e[i].key, e[i].value)
				      : cJSON_AddNullToObject(m, e[i].key);
		if (!v)
			return -ENOMEM;
	}
	return 0;
}

char *kube_merge_patch(const struct kube_patch_entry *annotations, size_t n_annotations,
		       const struct kube_patch_entry *labels, size_t n_labels, const char *resource_version)
{
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
	if (!meta || (resource_version && !cJSON_AddStringToObject(meta, "resourceVersion", resource_version)) ||
	    add_map(meta, "annotations", annotations, n_annotations) < 0 ||
	    add_map(meta, "labels", labels, n_labels) < 0)
		return NULL;
	return cJSON_PrintUnformatted(root);
}

int kube_secret_data(const char *data, size_t len, const char *key, size_t max, unsigned char **ret,
		     size_t *ret_len, const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r = parse_object(data, len, &j);
	if (r < 0)
		return jsonx_fail(err, "not a JSON object", r);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Secret") != 0)
		return jsonx_fail(err, "kind: not Secret", -EINVAL);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "data");
	if (d && !cJSON_IsObject(d) && !cJSON_IsNull(d))
		return jsonx_fail(err, "data: not an object", -EINVAL);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);
	if (!v || cJSON_IsNull(v))
		return jsonx_fail(err, "data: key missing", -ENOENT);
	if (!cJSON_IsString(v))
		return jsonx_fail(err, "data: value not a string", -EINVAL);
	r = b64_decode(v->valuestring, strlen(v->valuestring), max, 0, ret, ret_len);
	if (r < 0)
		return jsonx_fail(err, r == -EMSGSIZE ? "data: value too large" : "data: value not base64", r);
	return 0;
}

/* ---- NodeList ---------------------------------------------------------------- */

/* Parses a NodeList; *items is its items array (NULL when absent or null). */
static int node_list_items(const char *data, size_t len, cJSON **j, const cJSON **items, const char **err)
{
	int r = parse_object(data, len, j);
	if (r < 0)
		return jsonx_fail(err, "not a JSON object", r);
	if (check_kind(*j, "NodeList") < 0)
		return jsonx_fail(err, "kind", -EINVAL);
	*items = cJSON_GetObjectItemCaseSensitive(*j, "items");
	if (*items && !cJSON_IsNull(*items) && !cJSON_IsArray(*items))
		return jsonx_fail(err, "items", -EINVAL);
	return 0;
}

int kube_node_list_find(const char *data, size_t len, const char *key, const char *value, char **ret,
			const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	const cJSON *items;
	int r = node_list_items(data, len, &j, &items, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *found = NULL;
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, items)
	{
		const cJSON *meta;
		_cleanup_free_ char *v = NULL, *name = NULL;
		if (!cJSON_IsObject(it) || get_object(it, "metadata", &meta) < 0)
			return jsonx_fail(err, "items[].metadata", -EINVAL);
		if ((r = map_value(meta, "labels", key, &v)) < 0)
			return jsonx_fail(err, "items[].metadata.labels", r);
		/* The server filtered by the selector; an item without the
		 * label (a server ignoring the selector) is not ours. */
		if (!v || strcmp(v, value) != 0)
			continue;
		if (!meta || (r = dup_string(meta, "name", KUBE_NAME_MAX, &name)) < 0 || !name ||
		    !kube_name_is_valid(name))
			return jsonx_fail(err, "items[].metadata.name", r < 0 ? r : -EINVAL);
		if (n++ == 0)
			found = TAKE_PTR(name);
	}
	if (n == 0)
		return -ENOENT;
	if (n > 1)
		return -ENOTUNIQ;
	*ret = TAKE_PTR(found);
	return 0;
}

int kube_node_list_named(const char *data, size_t len, const char *name, struct kube_node *ret, const char **err)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	const cJSON *items;
	int r = node_list_items(data, len, &j, &items, err);
	if (r < 0)
		return r;
	struct kube_node found = {};
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, items)
	{
		const cJSON *meta;
		_cleanup_free_ char *item_name = NULL;
		if (!cJSON_IsObject(it) || get_object(it, "metadata", &meta) < 0 || !meta ||
		    (r = dup_string(meta, "name", KUBE_NAME_MAX, &item_name)) < 0 || !item_name) {
			kube_node_done(&found);
			return jsonx_fail(err, "items[].metadata.name", r < 0 ? r : -EINVAL);
		}
		if (strcmp(item_name, name) != 0)
			continue;
		if (n++ > 0) {
			kube_node_done(&found);
			return -ENOTUNIQ;
		}
		if ((r = node_from_json(it, &found, err)) < 0)
			return r;
	}
	if (n == 0)
		return -ENOENT;
	*ret = found;
	return 0;
}
