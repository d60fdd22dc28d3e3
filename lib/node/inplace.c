/* In-place update classification (GEP-31); see inplace.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "inplace.h"
#include "osc.h"
#include "ytree.h"

static const char *const kind_names[INPLACE_N_KINDS] = {
	"os-version",          "kubelet-minor-version",  "kubelet-config",  "kubelet-cpu-manager-policy",
	"kubelet-ca-rotation", "node-agent-ca-rotation", "sa-key-rotation",
};

const char *inplace_kind_name(unsigned kind)
{
	for (unsigned i = 0; i < INPLACE_N_KINDS; i++)
		if (kind == 1u << i)
			return kind_names[i];
	return NULL;
}

unsigned inplace_kind_from_name(const char *name)
{
	for (unsigned i = 0; name && i < INPLACE_N_KINDS; i++)
		if (strcmp(name, kind_names[i]) == 0)
			return 1u << i;
	return 0;
}

static const char *const state_names[] = { "waiting", "running", "successful", "failed" };

const char *inplace_state_name(enum inplace_state s)
{
	return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : NULL;
}

int inplace_state_from_name(const char *name, enum inplace_state *ret)
{
	for (unsigned i = 0; name && i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (strcmp(name, state_names[i]) == 0) {
			*ret = (enum inplace_state)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- versions (pkg/utils/version/version.go) ---------------------------- */

struct semver {
	uint64_t part[3];
	unsigned n; /* parts written: 1..3 */
};

/* Normalize() then Masterminds semver.NewVersion() for what Normalize leaves
 * (no pre-release or metadata). */
static int semver_parse(const char *s, struct semver *v)
{
	if (!s)
		return -EINVAL;
	char buf[INPLACE_VERSION_MAX + 1];
	size_t n = 0;
	for (const char *p = s; *p && !strchr("-+~", *p); p++) {
		if (*p == 'v')
			continue;
		if (n >= INPLACE_VERSION_MAX)
			return -EINVAL;
		buf[n++] = *p;
	}
	buf[n] = '\0';
	*v = (struct semver){};
	const char *p = buf;
	for (;;) {
		if (v->n == 3 || *p < '0' || *p > '9')
			return -EINVAL;
		uint64_t x = 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (x > (UINT64_MAX - 9) / 10)
				return -EINVAL; /* strconv.ParseUint range error */
			x = x * 10 + (uint64_t)(*p - '0');
		}
		v->part[v->n++] = x;
		if (*p == '\0')
			return 0;
		if (*p++ != '.')
			return -EINVAL;
	}
}

int inplace_version_equal(const char *a, const char *b, bool *ret)
{
	struct semver va, vb;
	if (semver_parse(a, &va) < 0 || semver_parse(b, &vb) < 0)
		return -EINVAL;
	/* A constraint "= 1.2" with missing parts is "dirty" in Masterminds
	 * semver and checked as the tilde "~1.2": >= 1.2.0 and the same major
	 * and (unless the minor is missing too) the same minor. */
	bool eq;
	if (vb.n == 3)
		eq = va.part[0] == vb.part[0] && va.part[1] == vb.part[1] && va.part[2] == vb.part[2];
	else
		eq = va.part[0] == vb.part[0] && (vb.n == 1 || va.part[1] == vb.part[1]);
	*ret = eq;
	return 0;
}

int inplace_minor_differs(const char *old_version, const char *new_version, bool *ret)
{
	struct semver o, n;
	if (semver_parse(old_version, &o) < 0 || semver_parse(new_version, &n) < 0)
		return -EINVAL;
	*ret = o.part[1] != n.part[1];
	return 0;
}

/* ---- GetOSVersion (reconciler.go) --------------------------------------- */

static bool is_word(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int inplace_os_version(const char *os_release, size_t len, char *out, size_t size)
{
	static const char key[] = "PRETTY_NAME=";
	const char *v = NULL, *end = os_release + len;
	/* The first match of the unanchored (PRETTY_NAME)=(.*): "." stops at a newline. */
	for (const char *p = os_release; p && p + sizeof(key) - 1 <= end; p++) {
		p = memchr(p, 'P', (size_t)(end - p));
		if (!p || (size_t)(end - p) < sizeof(key) - 1)
			break;
		if (memcmp(p, key, sizeof(key) - 1) == 0) {
			v = p + sizeof(key) - 1;
			break;
		}
	}
	if (!v)
		return -ENOENT;
	const char *ve = memchr(v, '\n', (size_t)(end - v));
	if (!ve)
		ve = end;
	/* strings.Trim(value, "\"") */
	while (v < ve && *v == '"')
		v++;
	while (ve > v && ve[-1] == '"')
		ve--;
	/* \b\d+(?:\.\d+)*\b, leftmost; at a start, the longest chain of
	 * maximal digit runs whose end is a word boundary (a shorter digit run
	 * would end before a digit, never at a boundary). */
	for (const char *s = v; s < ve; s++) {
		if (!is_digit(*s) || (s > v && is_word(s[-1])))
			continue;
		const char *ends[64];
		size_t n_ends = 0;
		const char *q = s;
		for (;;) {
			while (q < ve && is_digit(*q))
				q++;
			if (n_ends < sizeof(ends) / sizeof(ends[0]))
				ends[n_ends++] = q;
			if (q + 1 < ve && *q == '.' && is_digit(q[1]))
				q++;
			else
				break;
		}
		while (n_ends > 0) {
			const char *e = ends[--n_ends];
			/* A NUL counts as a non-word byte, like any other. */
			if (e == ve || !is_word(*e)) {
				size_t l = (size_t)(e - s);
				if (l + 1 > size)
					return -EMSGSIZE;
				memcpy(out, s, l);
				out[l] = '\0';
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* ---- RFC 3339 (Go time.Parse(time.RFC3339, ...)) ------------------------ */

static int digits(const char *s, unsigned n, int *ret)
{
	int x = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		x = x * 10 + (s[i] - '0');
	}
	*ret = x;
	return 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int inplace_parse_time(const char *s, int64_t *sec, int32_t *nsec)
{
	int Y, M, D, h, m, S;
	if (!s || strnlen(s, 20) < 20 || digits(s, 4, &Y) < 0 || s[4] != '-' || digits(s + 5, 2, &M) < 0 ||
	    s[7] != '-' || digits(s + 8, 2, &D) < 0 || s[10] != 'T' || digits(s + 11, 2, &h) < 0 || s[13] != ':' ||
	    digits(s + 14, 2, &m) < 0 || s[16] != ':' || digits(s + 17, 2, &S) < 0)
		return -EINVAL;
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
	if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || (M == 2 && D == 29 && !leap) || h > 23 || m > 59 ||
	    S > 59)
		return -EINVAL;
	const char *p = s + 19;
	int32_t ns = 0;
	if (*p == '.' || *p == ',') {
		p++;
		unsigned nd = 0;
		for (; is_digit(*p); p++, nd++)
			if (nd < 9)
				ns = ns * 10 + (*p - '0');
		if (nd == 0)
			return -EINVAL;
		for (; nd < 9; nd++)
			ns *= 10;
	}
	int off = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (digits(p + 1, 2, &oh) < 0 || p[3] != ':' || digits(p + 4, 2, &om) < 0 || oh > 23 || om > 59)
			return -EINVAL;
		off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*sec = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + S - off;
	*nsec = ns;
	return 0;
}

/* ---- quantities (k8s.io/apimachinery resource.ParseQuantity) ------------- */

bool inplace_quantity_is_valid(const char *s)
{
	if (!s || !*s)
		return false;
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	size_t nd = 0;
	while (is_digit(*p))
		p++, nd++;
	if (*p == '.') {
		p++;
		while (is_digit(*p))
			p++, nd++;
	}
	if (nd == 0)
		return false;
	static const char *const suffixes[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m",
						"k", "M",  "G",  "T",  "P",  "E",  NULL };
	for (const char *const *x = suffixes; *x; x++)
		if (strcmp(p, *x) == 0)
			return true;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!is_digit(*p))
			return false;
		while (is_digit(*p))
			p++;
		return *p == '\0';
	}
	return false;
}

/* ---- the classifier (changes.go) ----------------------------------------- */

_printf_(2, 3) static int fail(char *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, INPLACE_ERROR_MAX, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* kubeletcomponent.PathKubeletConfig */
#define KUBELET_CONFIG_PATH "/var/lib/kubelet/config/kubelet"

#define KC_MAP_MAX 8
struct kubelet_config {
	struct ynode *root;
	const char *cpu_manager_policy; /* "" when not set */
	const struct ynode *eviction_hard;  /* mappings or NULL */
	const struct ynode *kube_reserved;
};

static void kubelet_config_done(struct kubelet_config *k)
{
	ynode_free(k->root);
	k->root = NULL;
}

/* getKubeletConfig(): the kubelet configuration file of the OSC, decoded. */
static int kubelet_config(const struct osc *osc, const char *which, struct kubelet_config *ret, char *err)
{
	const struct osc_file *f = osc_find_file(osc, KUBELET_CONFIG_PATH);
	if (!f || f->source != OSC_SOURCE_INLINE)
		return fail(err, "failed to get %s kubelet config from the OSC: kubelet config file with path: \"%s\" not found in OSC",
			    which, KUBELET_CONFIG_PATH);
	char e[256] = "";
	int r = ytree_load((const char *)f->content, f->content_len, &ret->root, e, sizeof(e));
	if (r < 0 || ret->root->type != Y_MAP) {
		if (r >= 0)
			kubelet_config_done(ret);
		return fail(err, "failed to get %s kubelet config from the OSC: %s", which, r < 0 ? e : "not a mapping");
	}
	const struct ynode *n;
	size_t line;
	ret->cpu_manager_policy = "";
	if (ytree_map_get(ret->root, "cpuManagerPolicy", &n, &line) < 0 ||
	    (n && (n->type != Y_SCALAR || n->kind != YS_STR)))
		goto bad;
	if (n)
		ret->cpu_manager_policy = n->value;
	if (ytree_map_get(ret->root, "evictionHard", &ret->eviction_hard, &line) < 0 ||
	    (ret->eviction_hard && ret->eviction_hard->type != Y_MAP) ||
	    ytree_map_get(ret->root, "kubeReserved", &ret->kube_reserved, &line) < 0 ||
	    (ret->kube_reserved && ret->kube_reserved->type != Y_MAP))
		goto bad;
	return 0;
bad:
	kubelet_config_done(ret);
	return fail(err, "failed to get %s kubelet config from the OSC: cpuManagerPolicy, evictionHard or kubeReserved malformed",
		    which);
}

/* One entry of a map[string]string; NULL when absent or not a scalar. */
static const char *map_entry(const struct ynode *map, const char *key)
{
	const struct ynode *n = NULL;
	size_t line;
	if (!map || ytree_map_get(map, key, &n, &line) < 0 || !n || n->type != Y_SCALAR)
		return NULL;
	return n->value;
}

/* maps.Equal() on collectRelevantEntries() of both. */
static bool relevant_equal(const struct ynode *a, const struct ynode *b, const char *const *keys)
{
	for (; *keys; keys++) {
		const char *x = map_entry(a, *keys), *y = map_entry(b, *keys);
		if (!x != !y || (x && strcmp(x, y) != 0))
			return false;
	}
	return true;
}

static bool quantities_valid(const struct ynode *map)
{
	for (size_t i = 0; map && i + 1 < map->n_items; i += 2) {
		const struct ynode *v = map->items[i + 1];
		if (v->type != Y_SCALAR || !inplace_quantity_is_valid(v->value))
			return false;
	}
	return true;
}

/* ComputeKubeletConfigChange() */
static int kubelet_config_change(const struct osc *old, const struct osc *new, unsigned *kinds, char *err)
{
	static const char *const eviction[] = { "memory.available", "imagefs.available", "imagefs.inodesFree",
						"nodefs.available", "nodefs.inodesFree", NULL };
	static const char *const reserved[] = { "cpu", "memory", "ephemeral-storage", "pid", NULL };
	_cleanup_(kubelet_config_done) struct kubelet_config o = {}, n = {};
	int r;
	if ((r = kubelet_config(old, "old", &o, err)) < 0 || (r = kubelet_config(new, "new", &n, err)) < 0)
		return r;
	if (strcmp(o.cpu_manager_policy, n.cpu_manager_policy) != 0)
		*kinds |= INPLACE_KUBELET_CPU_MANAGER_POLICY;
	if (!relevant_equal(o.eviction_hard, n.eviction_hard, eviction)) {
		*kinds |= INPLACE_KUBELET_CONFIG;
		return 0;
	}
	if (!quantities_valid(o.kube_reserved) || !quantities_valid(n.kube_reserved))
		return fail(err, "failed to check if kubelet config has changed: error validating quantities");
	if (!relevant_equal(o.kube_reserved, n.kube_reserved, reserved))
		*kinds |= INPLACE_KUBELET_CONFIG;
	return 0;
}

/* ComputeCredentialsRotationChanges() for one rotation. */
static bool rotation_changed(const struct osc_inplace *o, const struct osc_rotation *ro, const struct osc_rotation *rn)
{
	if (!o->credentials_rotation)
		return rn->present && rn->time;
	if (!ro->present || !rn->present)
		return false;
	/* metav1.Time.Equal: two nil times are equal, nil and non-nil are not. */
	if (!ro->time || !rn->time)
		return !ro->time != !rn->time;
	return ro->sec != rn->sec || ro->nsec != rn->nsec;
}

int inplace_classify(const struct osc *old, const struct osc *new, const char *running_os_version, unsigned *ret,
		     char *err)
{
	unsigned kinds = 0;
	if (err)
		err[0] = '\0';
	if (!old || !new || !old->inplace.present || !new->inplace.present) {
		*ret = 0;
		return 0;
	}
	const struct osc_inplace *o = &old->inplace, *n = &new->inplace;

	/* IsOsVersionUpToDate() */
	bool eq;
	if (!running_os_version)
		return fail(err, "failed to compute OS version change: current OS version is nil");
	if (inplace_version_equal(running_os_version, n->os_version, &eq) < 0)
		return fail(err, "failed to compute OS version change: failed comparing current OS version \"%s\" with OS version in the new OSC \"%s\"",
			    running_os_version, n->os_version);
	if (!eq)
		kinds |= INPLACE_OS_VERSION;

	if (strcmp(o->kubelet_version, n->kubelet_version) != 0) {
		bool minor;
		if (inplace_minor_differs(o->kubelet_version, n->kubelet_version, &minor) < 0)
			return fail(err, "failed to check if kubelet minor version was updated: \"%s\" -> \"%s\"",
				    o->kubelet_version, n->kubelet_version);
		if (minor)
			kinds |= INPLACE_KUBELET_MINOR_VERSION;
	}

	int r = kubelet_config_change(old, new, &kinds, err);
	if (r < 0)
		return r;

	if (n->credentials_rotation) {
		if (rotation_changed(o, &o->ca, &n->ca))
			kinds |= INPLACE_KUBELET_CA_ROTATION | INPLACE_NODE_AGENT_CA_ROTATION;
		if (rotation_changed(o, &o->sa, &n->sa))
			kinds |= INPLACE_SA_KEY_ROTATION;
	}
	*ret = kinds;
	return 0;
}
