/* The node's configuration file; see config.h.
 *
 * The parser is table-driven: every accepted key has one row naming its JSON
 * section, its type and where it lands in struct config. Anything not in the
 * table is an error, and so is a key given twice (cJSON keeps both). */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "errbuf.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "urlx.h"

enum field_type {
	FIELD_STRING,   /* any string */
	FIELD_PATH,     /* absolute normalised path */
	FIELD_URL,      /* https://host[:port][/path] */
	FIELD_BOOL,
	FIELD_MS,       /* unsigned milliseconds, 1 .. 24 h */
	FIELD_RSA_BITS, /* 1024 .. 16384 */
	FIELD_RATIO,    /* 0.0 .. 1.0 */
	FIELD_SIZE,     /* bytes, 4 KiB .. 1 GiB */
	FIELD_PORT,     /* 0 (off) .. 65535 */
	FIELD_TOGGLES,  /* 1 .. CONFIG_READY_TOGGLES_MAX */
	FIELD_LOOPBACK, /* "" (off) or an http:// URL to a loopback address */
};

struct field {
	const char *section;
	const char *key;
	enum field_type type;
	size_t offset;
};

#define F(section, key, type, member) { section, key, type, offsetof(struct config, member) }

static const struct field fields[] = {
	F("apiServer", "server", FIELD_URL, server),
	F("apiServer", "caFile", FIELD_PATH, ca_file),
	F("apiServer", "tokenFile", FIELD_PATH, token_file),
	F("apiServer", "clientCertificateFile", FIELD_PATH, client_cert_file),
	F("apiServer", "clientKeyFile", FIELD_PATH, client_key_file),
	F("apiServer", "bootstrapTokenFile", FIELD_PATH, bootstrap_token_file),
	F("apiServer", "httpsProxy", FIELD_STRING, https_proxy),
	F("apiServer", "noProxy", FIELD_STRING, no_proxy),
	F("node", "name", FIELD_STRING, node_name),
	F("node", "kubernetesVersion", FIELD_STRING, kubernetes_version),
	F("node", "machineName", FIELD_STRING, machine_name),
	F("node", "zone", FIELD_STRING, zone),
	F("osc", "secretNamespace", FIELD_STRING, secret_namespace),
	F("osc", "secretName", FIELD_STRING, secret_name),
	F("osc", "followSecretNameLabel", FIELD_BOOL, follow_secret_name_label),
	F("ssh", "loginUser", FIELD_STRING, login_user),
	F("ssh", "exclusive", FIELD_BOOL, keys_exclusive),
	F("ssh", "createUser", FIELD_BOOL, create_user),
	F("ssh", "sudoers", FIELD_STRING, sudoers),
	F("ssh", "rsaMinBits", FIELD_RSA_BITS, rsa_min_bits),
	F("ssh", "keysFromNodeAnnotation", FIELD_BOOL, keys_from_node_annotation),
	F("ssh", "keyDocumentPath", FIELD_PATH, key_document_path),
	F("ssh", "maxKeyShrink", FIELD_RATIO, max_key_shrink),
	F("ssh", "allowRoot", FIELD_BOOL, allow_root),
	F("gardener", "nodeAgentDir", FIELD_PATH, gna_dir),
	F("paths", "stateDir", FIELD_PATH, state_dir),
	F("paths", "execStateDir", FIELD_PATH, exec_state_dir),
	F("paths", "snapshot", FIELD_PATH, snapshot_path),
	F("timeouts", "connectMs", FIELD_MS, connect_timeout_ms),
	F("timeouts", "requestMs", FIELD_MS, request_timeout_ms),
	F("timeouts", "watchIdleMs", FIELD_MS, watch_idle_timeout_ms),
	F("timeouts", "resyncMs", FIELD_MS, resync_interval_ms),
	F("timeouts", "applyMs", FIELD_MS, apply_timeout_ms),
	F("timeouts", "csrMs", FIELD_MS, csr_timeout_ms),
	F("limits", "responseMaxBytes", FIELD_SIZE, response_max),
	F("lease", "enabled", FIELD_BOOL, lease_enabled),
	F("events", "enabled", FIELD_BOOL, events_enabled),
	F("server", "bindAddress", FIELD_STRING, server_bind_address),
	F("server", "healthPort", FIELD_PORT, server_health_port),
	F("server", "metricsPort", FIELD_PORT, server_metrics_port),
	F("health", "enabled", FIELD_BOOL, health_enabled),
	F("health", "kubeletUrl", FIELD_LOOPBACK, health_kubelet_url),
	F("health", "containerdUrl", FIELD_LOOPBACK, health_containerd_url),
	F("health", "intervalMs", FIELD_MS, health_interval_ms),
	F("health", "timeoutMs", FIELD_MS, health_timeout_ms),
	F("health", "unhealthyMs", FIELD_MS, health_unhealthy_ms),
	F("health", "repairIntervalMs", FIELD_MS, health_repair_interval_ms),
	F("health", "readyToggles", FIELD_TOGGLES, health_ready_toggles),
	F("health", "readyWindowMs", FIELD_MS, health_ready_window_ms),
};

static const char *const sections[] = { "apiServer", "node", "osc", "ssh", "gardener", "paths", "timeouts", "limits",
					 "lease", "server", "events", "health" };

#define STRING_MAX 4096u
#define MS_MAX (24u * 3600u * 1000u)

/* Every error here is -EINVAL. */
#define fail(err, errlen, ...) errbuf_set(err, errlen, -EINVAL, __VA_ARGS__)

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* The JSON number must be an integer in [lo, hi]. */
static int get_uint(const cJSON *v, double lo, double hi, double *ret)
{
	if (!cJSON_IsNumber(v))
		return -EINVAL;
	double d = v->valuedouble;
	/* The range check first, so the cast below is defined. */
	if (!isfinite(d) || d < lo || d > hi || d != (double)(uint64_t)d)
		return -ERANGE;
	*ret = d;
	return 0;
}

static int set_field(struct config *c, const struct field *f, const cJSON *v, char *err, size_t errlen)
{
	char *base = (char *)c;
	double d;
	int r;

	switch (f->type) {
	case FIELD_STRING:
	case FIELD_PATH:
	case FIELD_URL:
	case FIELD_LOOPBACK: {
		if (!cJSON_IsString(v) || !v->valuestring)
			return fail(err, errlen, "%s.%s: expected a string", f->section, f->key);
		const char *s = v->valuestring;
		if (strlen(s) > STRING_MAX)
			return fail(err, errlen, "%s.%s: longer than %u bytes", f->section, f->key, STRING_MAX);
		if (has_control(s))
			return fail(err, errlen, "%s.%s: control character in value", f->section, f->key);
		if (f->type == FIELD_PATH && !fsx_path_is_safe(s, PATH_MAX))
			return fail(err, errlen, "%s.%s: not an absolute normalised path: \"%s\"", f->section,
				    f->key, s);
		if (f->type == FIELD_URL && !urlx_https_is_valid(s))
			return fail(err, errlen, "%s.%s: expected an https:// URL: \"%s\"", f->section, f->key, s);
		if (f->type == FIELD_LOOPBACK && *s && !urlx_loopback_is_valid(s))
			return fail(err, errlen,
				    "%s.%s: probes go to loopback only: expected http://127.x.y.z[:port]/path or "
				    "http://[::1][:port]/path, or \"\" (off): \"%s\"",
				    f->section, f->key, s);
		char *dup = strdup(s);
		if (!dup)
			return -ENOMEM;
		char **slot = (char **)(base + f->offset);
		free(*slot);
		*slot = dup;
		return 0;
	}
	case FIELD_BOOL:
		if (!cJSON_IsBool(v))
			return fail(err, errlen, "%s.%s: expected true or false", f->section, f->key);
		*(bool *)(base + f->offset) = cJSON_IsTrue(v);
		return 0;
	case FIELD_MS:
		r = get_uint(v, 1, MS_MAX, &d);
		if (r == -EINVAL)
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		if (r < 0)
			return fail(err, errlen, "%s.%s: expected an integer from 1 to %u", f->section, f->key,
				    MS_MAX);
		*(unsigned *)(base + f->offset) = (unsigned)d;
		return 0;
	case FIELD_RSA_BITS:
		r = get_uint(v, 1024, 16384, &d);
		if (r == -EINVAL)
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		if (r < 0)
			return fail(err, errlen, "%s.%s: expected an integer from 1024 to 16384", f->section,
				    f->key);
		*(unsigned *)(base + f->offset) = (unsigned)d;
		return 0;
	case FIELD_RATIO:
		if (!cJSON_IsNumber(v))
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		d = v->valuedouble;
		if (!isfinite(d) || d < 0.0 || d > 1.0)
			return fail(err, errlen, "%s.%s: expected a number from 0 to 1", f->section, f->key);
		memcpy(base + f->offset, &d, sizeof(d));
		return 0;
	case FIELD_SIZE:
		r = get_uint(v, 4096, 1024.0 * 1024 * 1024, &d);
		if (r == -EINVAL)
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		if (r < 0)
			return fail(err, errlen, "%s.%s: expected an integer from 4096 to 1073741824", f->section,
				    f->key);
		*(size_t *)(base + f->offset) = (size_t)d;
		return 0;
	case FIELD_PORT:
		r = get_uint(v, 0, 65535, &d);
		if (r == -EINVAL)
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		if (r < 0)
			return fail(err, errlen, "%s.%s: expected an integer from 0 (off) to 65535", f->section,
				    f->key);
		*(unsigned *)(base + f->offset) = (unsigned)d;
		return 0;
	case FIELD_TOGGLES:
		r = get_uint(v, 1, CONFIG_READY_TOGGLES_MAX, &d);
		if (r == -EINVAL)
			return fail(err, errlen, "%s.%s: expected a number", f->section, f->key);
		if (r < 0)
			return fail(err, errlen, "%s.%s: expected an integer from 1 to %u", f->section, f->key,
				    CONFIG_READY_TOGGLES_MAX);
		*(unsigned *)(base + f->offset) = (unsigned)d;
		return 0;
	}
	return -EINVAL;
}

static const struct field *find_field(const char *section, const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(fields); i++)
		if (strcmp(fields[i].section, section) == 0 && strcmp(fields[i].key, key) == 0)
			return &fields[i];
	return NULL;
}

static bool is_section(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(sections); i++)
		if (strcmp(sections[i], s) == 0)
			return true;
	return false;
}

/* True when an earlier sibling of item has the same key. */
static bool is_duplicate(const cJSON *parent, const cJSON *item)
{
	for (const cJSON *p = parent->child; p && p != item; p = p->next)
		if (strcmp(p->string, item->string) == 0)
			return true;
	return false;
}

static int set_str(char **slot, const char *s)
{
	if (*slot)
		return 0;
	*slot = strdup(s);
	return *slot ? 0 : -ENOMEM;
}

/* The lowercased host name, the name the kubelet registers by default. */
static int default_node_name(char **slot)
{
	if (*slot)
		return 0;
	char host[HOST_NAME_MAX + 1] = "";
	if (gethostname(host, sizeof(host)) < 0)
		return 0; /* leave it unset; the agent insists on one */
	host[HOST_NAME_MAX] = '\0';
	for (char *p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (!*host)
		return 0;
	return set_str(slot, host);
}

static int fill_defaults(struct config *c)
{
	int r;
	if ((r = set_str(&c->secret_namespace, "kube-system")) < 0 ||
	    (r = set_str(&c->login_user, "gardener")) < 0 ||
	    (r = set_str(&c->sudoers, "ALL=(ALL) NOPASSWD:ALL")) < 0 ||
	    (r = set_str(&c->key_document_path, "/var/lib/node-agent/authorized-keys.json")) < 0 ||
	    (r = set_str(&c->state_dir, "/var/lib/node-agent")) < 0 ||
	    (r = set_str(&c->exec_state_dir, "/var/lib/cloud-config-exec")) < 0 ||
	    (r = set_str(&c->snapshot_path, "/var/lib/cloud-config-exec/authkeys.snap")) < 0 ||
	    (r = set_str(&c->server_bind_address, "127.0.0.1")) < 0 ||
	    /* gardener/gardener pkg/nodeagent/controller/healthcheck/kubelet.go: DefaultKubeletHealthEndpoint */
	    (r = set_str(&c->health_kubelet_url, "http://127.0.0.1:10248/healthz")) < 0 ||
	    (r = default_node_name(&c->node_name)) < 0)
		return r;
	return 0;
}

/* Values that stand for "unset" before parsing, so defaults can be told
 * apart from explicit settings for the numeric and boolean fields. */
static void init_unset(struct config *c)
{
	*c = (struct config){
		.follow_secret_name_label = true,
		.keys_exclusive = false,
		.create_user = true,
		.rsa_min_bits = 2048,
		.keys_from_node_annotation = false,
		.max_key_shrink = 0.5,
		.allow_root = false,
		.connect_timeout_ms = 10000,
		.request_timeout_ms = 30000,
		/* Longer than a watch stream (timeoutSeconds 660, agent/watch.c):
		 * the server ends every healthy stream first; kube-apiserver sends
		 * no bookmark on a watch without events, and a dead connection is
		 * ended by TCP keepalive within 60 s (agent/http.c). */
		.watch_idle_timeout_ms = 720000,
		.resync_interval_ms = 36000000,
		.apply_timeout_ms = 300000,
		.csr_timeout_ms = 900000, /* gardener-node-agent waits 15 min (certificatesigningrequest/certificate.go) */
		.response_max = 16u << 20,
		.lease_enabled = true,
		.events_enabled = true,
		.server_health_port = 2751,
		.server_metrics_port = 2752,
		/* gardener-node-agent's health check: every 30 s (add.go), a 10 s
		 * client timeout and a restart after one minute unhealthy
		 * (kubelet.go, healthcheck.go maxFailureDuration), >= 5 Ready
		 * toggles in 10 min (kubelet.go maxToggles, toggleTimeSpan) in
		 * gardener/gardener pkg/nodeagent/controller/healthcheck/. */
		.health_enabled = true,
		.health_interval_ms = 30000,
		.health_timeout_ms = 10000,
		.health_unhealthy_ms = 60000,
		.health_repair_interval_ms = 60000,
		.health_ready_toggles = 5,
		.health_ready_window_ms = 600000,
	};
}


/* An IPv4 literal, or an IPv6 one bare or in brackets ("::1", "[::1]"), as
 * agent/httpd.c binds to. */
static bool bind_address_is_valid(const char *s)
{
	struct in_addr ia;
	struct in6_addr i6;
	char buf[INET6_ADDRSTRLEN + 2];
	size_t len = strlen(s);
	if (inet_pton(AF_INET, s, &ia) == 1)
		return true;
	if (len >= sizeof(buf))
		return false;
	if (s[0] == '[') {
		if (len < 3 || s[len - 1] != ']')
			return false;
		memcpy(buf, s + 1, len - 2);
		buf[len - 2] = '\0';
	} else
		memcpy(buf, s, len + 1);
	return inet_pton(AF_INET6, buf, &i6) == 1;
}

static int check_consistency(const struct config *c, char *err, size_t errlen)
{
	if (!!c->client_cert_file != !!c->client_key_file)
		return fail(err, errlen, "apiServer.%s: required together with apiServer.%s",
			    c->client_cert_file ? "clientKeyFile" : "clientCertificateFile",
			    c->client_cert_file ? "clientCertificateFile" : "clientKeyFile");
	if (c->https_proxy && *c->https_proxy && strncmp(c->https_proxy, "http://", 7) != 0 &&
	    strncmp(c->https_proxy, "https://", 8) != 0)
		return fail(err, errlen, "apiServer.httpsProxy: expected an http:// or https:// URL: \"%s\"",
			    c->https_proxy);
	if (c->secret_name && !*c->secret_name)
		return fail(err, errlen, "osc.secretName: must not be empty");
	if (c->secret_namespace && !*c->secret_namespace)
		return fail(err, errlen, "osc.secretNamespace: must not be empty");
	if (c->node_name && !*c->node_name)
		return fail(err, errlen, "node.name: must not be empty");
	if (c->machine_name) {
		char why[GNACONFIG_ERROR_MAX];
		_cleanup_free_ char *m = NULL;
		if (gna_machine_name_parse(c->machine_name, strlen(c->machine_name), &m, why, sizeof(why)) < 0 ||
		    strcmp(m, c->machine_name) != 0)
			return fail(err, errlen, "node.machineName: %s", why[0] ? why : "trailing whitespace");
	}
	if (c->zone && !gna_label_value_is_valid(c->zone))
		return fail(err, errlen, "node.zone: not a valid label value: \"%s\"", c->zone);
	if (c->login_user && !*c->login_user)
		return fail(err, errlen, "ssh.loginUser: must not be empty");
	if (c->server_bind_address && !bind_address_is_valid(c->server_bind_address))
		return fail(err, errlen, "server.bindAddress: expected an IPv4 or IPv6 address: \"%s\"",
			    c->server_bind_address);
	return 0;
}

int config_parse(const char *data, size_t len, struct config *ret, char *err, size_t errlen)
{
	if (err && errlen > 0)
		*err = '\0';
	if (len > CONFIG_MAX)
		return fail(err, errlen, "larger than %u bytes", CONFIG_MAX);

	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!root) {
		size_t off = end && end >= data ? (size_t)(end - data) : 0;
		return fail(err, errlen, "malformed JSON near byte %zu", off);
	}
	/* Only whitespace may follow the document. */
	for (const char *p = end; p && p < data + len; p++)
		if (!isspace((unsigned char)*p)) {
			cJSON_Delete(root);
			return fail(err, errlen, "trailing data after the JSON document at byte %zu",
				    (size_t)(p - data));
		}

	struct config c;
	init_unset(&c);
	int r = 0;

	if (!cJSON_IsObject(root)) {
		r = fail(err, errlen, "expected a JSON object at the top level");
		goto out;
	}
	for (const cJSON *sec = root->child; sec; sec = sec->next) {
		if (!is_section(sec->string)) {
			r = fail(err, errlen, "%s: unknown key", sec->string);
			goto out;
		}
		if (is_duplicate(root, sec)) {
			r = fail(err, errlen, "%s: given more than once", sec->string);
			goto out;
		}
		if (!cJSON_IsObject(sec)) {
			r = fail(err, errlen, "%s: expected an object", sec->string);
			goto out;
		}
		for (const cJSON *item = sec->child; item; item = item->next) {
			const struct field *f = find_field(sec->string, item->string);
			if (!f) {
				r = fail(err, errlen, "%s.%s: unknown key", sec->string, item->string);
				goto out;
			}
			if (is_duplicate(sec, item)) {
				r = fail(err, errlen, "%s.%s: given more than once", sec->string, item->string);
				goto out;
			}
			/* JSON null means "not set": the default applies. */
			if (cJSON_IsNull(item))
				continue;
			r = set_field(&c, f, item, err, errlen);
			if (r < 0)
				goto out;
		}
	}
	r = fill_defaults(&c);
	if (r < 0)
		goto out;
	r = check_consistency(&c, err, errlen);
	if (r < 0)
		goto out;

	cJSON_Delete(root);
	*ret = c;
	return 0;
out:
	cJSON_Delete(root);
	config_done(&c);
	return r;
}

int config_load(const char *path, struct config *ret, char *err, size_t errlen)
{
	char why[256] = "";
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int r = negerrno();
		fail(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int r = negerrno();
		fail(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, "%s: not a regular file", path);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return fail(err, errlen, "%s: owned by uid %u, neither root nor us", path, (unsigned)st.st_uid);
	if (st.st_mode & S_IWOTH)
		return fail(err, errlen, "%s: world-writable", path);

	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r = fsx_read_fd(fd, CONFIG_MAX, &data, &len);
	if (r == -EFBIG)
		return fail(err, errlen, "%s: larger than %u bytes", path, CONFIG_MAX);
	if (r < 0) {
		fail(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	r = config_parse(data, len, ret, why, sizeof(why));
	if (r < 0) {
		fail(err, errlen, "%s: %s", path, why[0] ? why : strerror(-r));
		return r;
	}
	return 0;
}

int config_defaults(struct config *ret)
{
	struct config c;
	init_unset(&c);
	int r = fill_defaults(&c);
	if (r < 0) {
		config_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

void config_done(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		const struct field *f = &fields[i];
		if (f->type == FIELD_STRING || f->type == FIELD_PATH || f->type == FIELD_URL ||
		    f->type == FIELD_LOOPBACK) {
			char **slot = (char **)((char *)c + f->offset);
			free(*slot);
			*slot = NULL;
		}
	}
}

/* The text of field f's value in c into buf; NULL for an unset string. */
static const char *field_text(const struct config *c, const struct field *f, char *buf, size_t size)
{
	const char *base = (const char *)c;
	switch (f->type) {
	case FIELD_STRING:
	case FIELD_PATH:
	case FIELD_URL:
	case FIELD_LOOPBACK: {
		const char *v = *(char *const *)(base + f->offset);
		if (!v || strcmp(f->key, "httpsProxy") != 0)
			return v;
		/* A proxy URL may carry a password: never printed. */
		const char *at = strrchr(v, '@'), *scheme = strstr(v, "://");
		if (!at)
			return v;
		const char *user = scheme && scheme < at ? scheme + 3 : v;
		snprintf(buf, size, "%.*s***%s", (int)(user - v), v, at);
		return buf;
	}
	case FIELD_BOOL:
		return *(const bool *)(base + f->offset) ? "true" : "false";
	case FIELD_RATIO: {
		double d;
		memcpy(&d, base + f->offset, sizeof(d));
		snprintf(buf, size, "%g", d);
		return buf;
	}
	case FIELD_SIZE:
		snprintf(buf, size, "%zu", *(const size_t *)(base + f->offset));
		return buf;
	case FIELD_MS:
	case FIELD_RSA_BITS:
	case FIELD_PORT:
	case FIELD_TOGGLES:
		snprintf(buf, size, "%u", *(const unsigned *)(base + f->offset));
		return buf;
	}
	return NULL;
}

int config_each(const struct config *c, const char *data, size_t len, config_setting_fn fn, void *userdata)
{
	cJSON *root = NULL;
	if (data) {
		root = cJSON_ParseWithLength(data, len);
		if (!root)
			return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];
		const cJSON *sec = root ? cJSON_GetObjectItemCaseSensitive(root, f->section) : NULL;
		const cJSON *item = cJSON_IsObject(sec) ? cJSON_GetObjectItemCaseSensitive(sec, f->key) : NULL;
		char name[64], buf[STRING_MAX + 8];
		snprintf(name, sizeof(name), "%s.%s", f->section, f->key);
		fn(name, field_text(c, f, buf, sizeof(buf)), item && !cJSON_IsNull(item), userdata);
	}
	cJSON_Delete(root);
	return 0;
}
