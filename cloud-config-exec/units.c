/* The systemd half of an apply: the pure plan (which units change, and why)
 * and carrying it out (unit files below a root, then systemd.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include "cleanup.h"
#include "fsx.h"
#include "log.h"
#include "osc.h"
#include "systemd.h"
#include "units.h"

/* Unit files and drop-ins are written 0644, not 0600 as gardener-node-agent
 * does: that is the mode of every other unit file on the system, it lets
 * unprivileged tooling (systemctl cat, systemd-analyze verify, monitoring)
 * read the definition, and the manager needs nothing more. Unit files must
 * not carry secrets anyway: the OSC puts those into files with their own
 * (default 0600) permissions, which the unit then references. */
#define UNIT_FILE_MODE 0644
#define DROPIN_DIR_MODE 0755


struct plan_item {
	struct units_plan_entry e;  /* e.unit and e.reason point at the two below */
	char *unit;
	char *reason;
};

struct units_plan {
	struct plan_item *items;
	size_t n;
	size_t allocated;
	/* The old side widened by owned unit files (units_plan_compute_owned):
	 * shallow copies of the old OSC's units plus synthesized ones; synth[i]
	 * marks the units that are (or were widened) from owned paths. All
	 * memory of the synthesized parts is listed in arena. */
	struct osc widened;
	bool *synth;
	void **arena;
	size_t n_arena;
	size_t allocated_arena;
};

/* The bash gardener-user script reconciles authorized_keys of the user
 * "gardener" from /var/lib/gardener-user-authorized-keys, started by a path
 * unit when that file changes (Gardener PR #10671). cloud-config-exec does the
 * same natively and safely (keys step), so these two units would only race
 * with it: they are never written, enabled or started (and copies left armed
 * by gardener-node-agent are stopped and disabled: find_superseded()). */
/*
 * gardener-node-agent itself (its unit, and gardener-node-init.service that
 * installs and starts it from the user data) is superseded by node-agent and
 * this executor, which do its duties: a second agent on the node would
 * apply the same OSC concurrently (or fail every RestartSec=5 without its
 * binary). Its unit is in every OSC (gardener/gardener pkg/component/
 * extensions/operatingsystemconfig/original/components/nodeagent,
 * UnitName/InitUnitName in pkg/apis/config/nodeagent/v1alpha1/types.go). */
static const char *superseded_reason(const char *name)
{
	if (strcmp(name, "gardener-user.service") == 0 || strcmp(name, "gardener-user.path") == 0)
		return "superseded by cloud-config-exec's native SSH key handling";
	if (strcmp(name, "gardener-node-agent.service") == 0 || strcmp(name, "gardener-node-init.service") == 0)
		return "superseded by node-agent and cloud-config-exec, which do gardener-node-agent's work";
	return NULL;
}

static bool unit_is_superseded(const char *name)
{
	return superseded_reason(name) != NULL;
}

bool units_is_superseded(const char *name)
{
	return unit_is_superseded(name);
}

static const struct osc_unit *find_unit(const struct osc *osc, const char *name)
{
	return osc ? osc_find_unit(osc, name) : NULL;
}

static const struct osc_dropin *find_dropin(const struct osc_unit *u, const char *name)
{
	for (size_t i = 0; u && i < u->n_dropins; i++)
		if (strcmp(u->dropins[i].name, name) == 0)
			return &u->dropins[i];
	return NULL;
}

/* Remembers p (malloc'ed) as owned by the plan; frees it on failure. */
static void *arena_keep(struct units_plan *p, void *ptr)
{
	if (!ptr)
		return NULL;
	if (p->n_arena == p->allocated_arena) {
		size_t a = p->allocated_arena ? p->allocated_arena * 2 : 32;
		void **v = reallocarray(p->arena, a, sizeof(void *));
		if (!v) {
			free(ptr);
			return NULL;
		}
		p->arena = v;
		p->allocated_arena = a;
	}
	p->arena[p->n_arena++] = ptr;
	return ptr;
}

static char *arena_strdup(struct units_plan *p, const char *s)
{
	return arena_keep(p, strdup(s));
}

/* An owned path split: unit name and drop-in name (NULL: the unit file).
 * Returns false for paths that are not unit files or drop-ins of ours. */
static bool split_owned(const char *path, char unit[static 256], const char **ret_dropin)
{
	static const char prefix[] = "/" UNITS_DIR "/";
	const char *rest, *slash;
	size_t len;

	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
		return false;
	rest = path + sizeof(prefix) - 1;
	slash = strchr(rest, '/');
	if (!slash) {
		len = strlen(rest);
		*ret_dropin = NULL;
	} else {
		if (slash - rest < 3 || strncmp(slash - 2, ".d", 2) != 0 || !osc_dropin_name_is_valid(slash + 1))
			return false;
		len = (size_t)(slash - rest) - 2;
		*ret_dropin = slash + 1;
	}
	if (len == 0 || len > 255)
		return false;
	memcpy(unit, rest, len);
	unit[len] = 0;
	return osc_unit_name_is_valid(unit) && !unit_is_superseded(unit);
}

struct widen_unit {
	struct osc_unit u;
	bool synth;
};

static int cmp_widen_unit(const void *x, const void *y)
{
	return strcmp(((const struct widen_unit *)x)->u.name, ((const struct widen_unit *)y)->u.name);
}

/* Adds what owned says we created and old does not list to a copy of old's
 * unit list (p->widened). Returns 1 when something was added, 0 when owned
 * adds nothing (then p->widened stays empty and old is used as it is). */
static int widen_old(struct units_plan *p, const struct osc *old, char *const *owned)
{
	_cleanup_free_ struct widen_unit *w = NULL;
	size_t n = 0, allocated = 0;
	bool added = false;

	for (size_t i = 0; old && i < old->n_units; i++) {
		if (n == allocated) {
			allocated = allocated ? allocated * 2 : old->n_units + 8;
			struct widen_unit *nw = reallocarray(w, allocated, sizeof(*w));
			if (!nw)
				return -ENOMEM;
			w = nw;
		}
		w[n++] = (struct widen_unit){ .u = old->units[i] };
	}
	for (char *const *o = owned; o && *o; o++) {
		char name[256];
		const char *dropin;
		struct widen_unit *t = NULL;

		if (!split_owned(*o, name, &dropin))
			continue;
		for (size_t i = 0; i < n && !t; i++)
			if (strcmp(w[i].u.name, name) == 0)
				t = &w[i];
		if (dropin ? find_dropin(t ? &t->u : NULL, dropin) != NULL : (t && t->u.content))
			continue;  /* old accounts for it */
		if (!t) {
			if (n == allocated) {
				allocated = allocated ? allocated * 2 : 8;
				struct widen_unit *nw = reallocarray(w, allocated, sizeof(*w));
				if (!nw)
					return -ENOMEM;
				w = nw;
			}
			t = &w[n++];
			*t = (struct widen_unit){ .u = { .name = arena_strdup(p, name), .enable = -1 } };
			if (!t->u.name)
				return -ENOMEM;
		}
		t->synth = added = true;
		if (!dropin) {
			/* We wrote the unit file: we created the unit. Its content
			 * is unknown; "" differs from any content in the OSC. */
			t->u.content = arena_strdup(p, "");
			if (!t->u.content)
				return -ENOMEM;
			continue;
		}
		struct osc_dropin *d = arena_keep(p, calloc(t->u.n_dropins + 1, sizeof(*d)));
		if (!d)
			return -ENOMEM;
		if (t->u.n_dropins)
			memcpy(d, t->u.dropins, t->u.n_dropins * sizeof(*d));
		d[t->u.n_dropins] = (struct osc_dropin){ .name = arena_strdup(p, dropin), .content = arena_strdup(p, "") };
		if (!d[t->u.n_dropins].name || !d[t->u.n_dropins].content)
			return -ENOMEM;
		t->u.dropins = d;
		t->u.n_dropins++;
	}
	if (!added)
		return 0;
	qsort(w, n, sizeof(*w), cmp_widen_unit);
	p->widened.units = arena_keep(p, calloc(n ? n : 1, sizeof(struct osc_unit)));
	p->synth = arena_keep(p, calloc(n ? n : 1, sizeof(bool)));
	if (!p->widened.units || !p->synth)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		p->widened.units[i] = w[i].u;
		p->synth[i] = w[i].synth;
	}
	p->widened.n_units = n;
	return 1;
}

static int plan_add(struct units_plan *p, const char *unit, unsigned actions, const struct osc_unit *old,
		    const struct osc_unit *new, const char *fmt, ...) _printf_(6, 7);
static int plan_add(struct units_plan *p, const char *unit, unsigned actions, const struct osc_unit *old,
		    const struct osc_unit *new, const char *fmt, ...)
{
	if (p->n == p->allocated) {
		size_t a = p->allocated ? p->allocated * 2 : 16;
		struct plan_item *items = reallocarray(p->items, a, sizeof(*items));
		if (!items)
			return -ENOMEM;
		p->items = items;
		p->allocated = a;
	}
	_cleanup_free_ char *reason = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&reason, fmt, ap);
	va_end(ap);
	if (r < 0) {
		reason = NULL;
		return -ENOMEM;
	}
	_cleanup_free_ char *u = strdup(unit);
	if (!u)
		return -ENOMEM;
	struct plan_item *it = &p->items[p->n++];
	*it = (struct plan_item){
		.unit = TAKE_PTR(u),
		.reason = TAKE_PTR(reason),
	};
	it->e = (struct units_plan_entry){
		.unit = it->unit,
		.actions = actions,
		.reason = it->reason,
		.old = old,
		.new = new,
	};
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool has_file_path(const struct osc_unit *u, const char *path)
{
	for (size_t i = 0; i < u->n_file_paths; i++)
		if (strcmp(u->file_paths[i], path) == 0)
			return true;
	return false;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Unset enable means enable. */
static bool unit_enabled(const struct osc_unit *u)
{
	return u->enable != 0;
}

static bool unit_stops(const struct osc_unit *u)
{
	return u->enable == 0 || u->command == OSC_COMMAND_STOP;
}

/* Why the definition of a unit changed, in a few words (into buf), or false
 * when it did not. Lists compare as sets: the parser sorts filePaths, and
 * drop-in order means nothing to systemd (it sorts them by name itself). */
static bool definition_changed(const struct osc_unit *o, const struct osc_unit *n, char *buf, size_t size)
{
	if (!str_eq(o->content, n->content)) {
		snprintf(buf, size, "%s", !o->content ? "content added" : !n->content ? "content removed" :
			 "content changed");
		return true;
	}
	if (unit_enabled(o) != unit_enabled(n)) {
		snprintf(buf, size, "enable changed to %s", unit_enabled(n) ? "true" : "false");
		return true;
	}
	if (o->command != n->command) {
		snprintf(buf, size, "command changed");
		return true;
	}
	for (size_t i = 0; i < n->n_dropins; i++) {
		const struct osc_dropin *d = find_dropin(o, n->dropins[i].name);
		if (!d || !str_eq(d->content, n->dropins[i].content)) {
			snprintf(buf, size, "drop-in %s %s", n->dropins[i].name, d ? "changed" : "added");
			return true;
		}
	}
	for (size_t i = 0; i < o->n_dropins; i++)
		if (!find_dropin(n, o->dropins[i].name)) {
			snprintf(buf, size, "drop-in %s removed", o->dropins[i].name);
			return true;
		}
	if (o->n_file_paths != n->n_file_paths) {
		snprintf(buf, size, "filePaths changed");
		return true;
	}
	for (size_t i = 0; i < n->n_file_paths; i++)
		if (!has_file_path(o, n->file_paths[i])) {
			snprintf(buf, size, "filePaths changed");
			return true;
		}
	return false;
}

static const char *changed_file_of(const struct osc_unit *u, char *const *changed_files)
{
	for (char *const *f = changed_files; f && *f; f++)
		if (has_file_path(u, *f))
			return *f;
	return NULL;
}

static bool dropins_removed(const struct osc_unit *o, const struct osc_unit *n)
{
	for (size_t i = 0; o && i < o->n_dropins; i++)
		if (!find_dropin(n, o->dropins[i].name))
			return true;
	return false;
}

/* " (left by an unfinished apply)" when o was synthesized from owned paths. */
static const char *synth_note(const struct units_plan *p, const struct osc_unit *o)
{
	if (!o || !p->synth || o < p->widened.units || o >= p->widened.units + p->widened.n_units)
		return "";
	return p->synth[o - p->widened.units] ? " (left by an unfinished apply)" : "";
}

static int plan_new_unit(struct units_plan *p, const struct osc_unit *o, const struct osc_unit *n,
			 char *const *changed_files)
{
	char why[OSC_PATH_MAX + 64];
	const char *file;

	if (unit_is_superseded(n->name))
		return plan_add(p, n->name, UNITS_SUPERSEDED, o, n, "%s", superseded_reason(n->name));

	unsigned job = unit_stops(n) ? UNITS_STOP : UNITS_RESTART;
	unsigned enable = unit_enabled(n) ? UNITS_ENABLE : UNITS_DISABLE;
	unsigned write = n->content || n->n_dropins > 0 ? UNITS_WRITE : 0;

	if (!o)
		return plan_add(p, n->name, write | enable | job, o, n, "new unit");
	if (definition_changed(o, n, why, sizeof(why))) {
		unsigned actions = write | enable | job;
		if (dropins_removed(o, n))
			actions |= UNITS_REMOVE_DROPINS;
		/* It was ours and is an OS unit with drop-ins now: our file goes. */
		if (o->content && !n->content)
			actions |= UNITS_REMOVE;
		return plan_add(p, n->name, actions, o, n, "%s%s", why, synth_note(p, o));
	}
	file = changed_file_of(n, changed_files);
	if (file)
		return plan_add(p, n->name, job, o, n, "file %s changed", file);
	return plan_add(p, n->name, 0, o, n, "unchanged");
}

static int plan_dropped_unit(struct units_plan *p, const struct osc_unit *o)
{
	if (unit_is_superseded(o->name))
		return plan_add(p, o->name, UNITS_SUPERSEDED, o, NULL, "%s", superseded_reason(o->name));
	/* We created it: it goes entirely. Gardener #10809 / PR #11015: only
	 * what we created is deleted. */
	if (o->content)
		return plan_add(p, o->name, UNITS_STOP | UNITS_DISABLE | UNITS_REMOVE, o, NULL,
				"dropped by the OSC%s", synth_note(p, o));
	/* An OS unit we only patched: take our drop-ins away and restart it so
	 * it runs without them; the unit and its other drop-ins stay. */
	if (o->n_dropins > 0)
		return plan_add(p, o->name, UNITS_REMOVE_DROPINS | UNITS_RESTART, o, NULL,
				"dropped by the OSC (OS unit: our drop-ins removed, unit kept)%s", synth_note(p, o));
	return plan_add(p, o->name, 0, o, NULL, "dropped by the OSC (nothing of ours to remove)");
}

/* "kubelet" -> "kubelet.service"; a valid name stays as it is. */
static char *normalize_request(const char *name)
{
	char *s;
	if (osc_unit_name_is_valid(name))
		return strdup(name);
	if (asprintf(&s, "%s.service", name) < 0)
		return NULL;
	return s;
}

static const struct units_plan_entry *find_entry(const struct units_plan *p, const char *unit, bool requested)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct units_plan_entry *e = &p->items[i].e;
		if (!!(e->actions & UNITS_REQUESTED) == requested && strcmp(e->unit, unit) == 0)
			return e;
	}
	return NULL;
}

static int plan_request(struct units_plan *p, const char *request)
{
	_cleanup_free_ char *name = normalize_request(request);
	const struct units_plan_entry *e;

	if (!name)
		return -ENOMEM;
	if (!osc_unit_name_is_valid(name))
		return plan_add(p, request, UNITS_REQUESTED, NULL, NULL, "invalid unit name");
	if (find_entry(p, name, true))
		return plan_add(p, name, UNITS_REQUESTED, NULL, NULL, "restart requested twice");
	if (unit_is_superseded(name))
		return plan_add(p, name, UNITS_REQUESTED | UNITS_SUPERSEDED, NULL, NULL, "%s",
				superseded_reason(name));
	e = find_entry(p, name, false);
	if (e && (e->actions & UNITS_REMOVE) && !e->new)
		return plan_add(p, name, UNITS_REQUESTED, NULL, NULL,
				"restart requested, but the OSC dropped the unit");
	if (e && (e->actions & UNITS_STOP))
		return plan_add(p, name, UNITS_REQUESTED, NULL, NULL, "restart requested, but the OSC stops the unit");
	if (e && (e->actions & UNITS_RESTART))
		return plan_add(p, name, UNITS_REQUESTED, NULL, NULL,
				"restart requested; already restarted by this apply");
	return plan_add(p, name, UNITS_REQUESTED | UNITS_RESTART, NULL, NULL, "restart requested");
}

int units_plan_compute(const struct osc *old, const struct osc *new, char *const *changed_files,
		       char *const *restart_requests, struct units_plan **ret)
{
	return units_plan_compute_owned(old, new, changed_files, restart_requests, NULL, ret);
}

int units_plan_compute_owned(const struct osc *old, const struct osc *new, char *const *changed_files,
			     char *const *restart_requests, char *const *owned, struct units_plan **ret)
{
	return units_plan_compute_held(old, new, changed_files, restart_requests, owned, NULL, ret);
}

/* Holds back every non-request, non-superseded entry (see units.h). */
static int plan_hold(struct units_plan *p, const char *hold)
{
	for (size_t i = 0; i < p->n; i++) {
		struct plan_item *it = &p->items[i];
		if (it->e.actions & (UNITS_REQUESTED | UNITS_SUPERSEDED))
			continue;
		char *reason = NULL;
		if (asprintf(&reason, "held back (%s): %s", hold, it->reason) < 0)
			return -ENOMEM;
		free(it->reason);
		it->reason = reason;
		it->e.reason = reason;
		it->e.held = it->e.actions;
		it->e.actions = UNITS_HELD;
	}
	return 0;
}

int units_plan_compute_held(const struct osc *old, const struct osc *new, char *const *changed_files,
			    char *const *restart_requests, char *const *owned, const char *hold,
			    struct units_plan **ret)
{
	_cleanup_units_plan_ struct units_plan *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	r = widen_old(p, old, owned);
	if (r < 0)
		return r;
	if (r > 0)
		old = &p->widened;
	for (size_t i = 0; i < new->n_units; i++) {
		r = plan_new_unit(p, find_unit(old, new->units[i].name), &new->units[i], changed_files);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; old && i < old->n_units; i++) {
		if (osc_find_unit(new, old->units[i].name))
			continue;
		r = plan_dropped_unit(p, &old->units[i]);
		if (r < 0)
			return r;
	}
	/* Before the requests: a unit held back is not restarted by this
	 * apply, so its request restarts it. */
	if (hold && (r = plan_hold(p, hold)) < 0)
		return r;
	for (char *const *q = restart_requests; q && *q; q++) {
		r = plan_request(p, *q);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

size_t units_plan_size(const struct units_plan *plan)
{
	return plan->n;
}

const struct units_plan_entry *units_plan_get(const struct units_plan *plan, size_t i)
{
	return i < plan->n ? &plan->items[i].e : NULL;
}

const struct units_plan_entry *units_plan_find(const struct units_plan *plan, const char *unit, bool requested)
{
	return find_entry(plan, unit, requested);
}

void units_plan_free(struct units_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->n; i++) {
		free(plan->items[i].unit);
		free(plan->items[i].reason);
	}
	free(plan->items);
	for (size_t i = 0; i < plan->n_arena; i++)
		free(plan->arena[i]);
	free(plan->arena);
	free(plan);
}

int units_owned_paths(const struct osc *osc, char ***ret)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0, allocated = 0;

	for (size_t i = 0; i < osc->n_units; i++) {
		const struct osc_unit *u = &osc->units[i];
		if (unit_is_superseded(u->name))
			continue;
		for (size_t k = 0; k <= u->n_dropins; k++) {
			char *path;
			if (k == 0 && !u->content)
				continue;
			if (k == 0 ? asprintf(&path, "/%s/%s", UNITS_DIR, u->name) < 0 :
				     asprintf(&path, "/%s/%s.d/%s", UNITS_DIR, u->name, u->dropins[k - 1].name) < 0)
				return -ENOMEM;
			if (n + 1 >= allocated) {
				allocated = allocated ? allocated * 2 : 16;
				char **nv = reallocarray(v, allocated, sizeof(char *));
				if (!nv) {
					free(path);
					return -ENOMEM;
				}
				v = nv;
			}
			v[n++] = path;
			v[n] = NULL;
		}
	}
	if (!v) {
		v = calloc(1, sizeof(char *));
		if (!v)
			return -ENOMEM;
	}
	qsort(v, n, sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}

const char *units_actions_to_string(unsigned actions, char *buf, size_t size)
{
	static const struct {
		unsigned bit;
		const char *word;
	} words[] = {
		{ UNITS_WRITE, "write" },     { UNITS_REMOVE, "remove" },   { UNITS_REMOVE_DROPINS, "remove-dropins" },
		{ UNITS_ENABLE, "enable" },   { UNITS_DISABLE, "disable" }, { UNITS_RESTART, "restart" },
		{ UNITS_STOP, "stop" },       { UNITS_REQUESTED, "requested" },
		{ UNITS_SUPERSEDED, "superseded" }, { UNITS_HELD, "held" }, { UNITS_DRIFT, "drift" },
		{ UNITS_MODE, "mode" },
	};
	size_t len = 0;

	if (size == 0)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(words); i++) {
		if (!(actions & words[i].bit))
			continue;
		int k = snprintf(buf + len, size - len, "%s%s", len ? "," : "", words[i].word);
		if (k < 0 || (size_t)k >= size - len)
			break;
		len += (size_t)k;
	}
	if (len == 0)
		snprintf(buf, size, "none");
	return buf;
}

/* A growing string; every append either fits or sets failed. */
struct sbuf {
	char *s;
	size_t len;
	bool failed;
};

static void sbuf_addf(struct sbuf *b, const char *fmt, ...) _printf_(2, 3);
static void sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	_cleanup_free_ char *piece = NULL;
	va_list ap;

	if (b->failed)
		return;
	va_start(ap, fmt);
	int k = vasprintf(&piece, fmt, ap);
	va_end(ap);
	if (k < 0) {
		piece = NULL;
		b->failed = true;
		return;
	}
	char *s = realloc(b->s, b->len + (size_t)k + 1);
	if (!s) {
		b->failed = true;
		return;
	}
	memcpy(s + b->len, piece, (size_t)k + 1);
	b->s = s;
	b->len += (size_t)k;
}

/* The summary groups of units_plan_format(). */
static const char *summary_group(const struct units_plan_entry *e)
{
	unsigned a = e->actions;

	if (a & UNITS_REQUESTED)
		return (a & UNITS_RESTART) ? "restart requested" : NULL;
	if (a & UNITS_SUPERSEDED)
		return e->new ? "superseded" : NULL;
	if (a & UNITS_HELD)
		return e->held ? "held back" : NULL;
	if ((a & UNITS_REMOVE) && !e->new)
		return "remove";
	if (a & UNITS_STOP)
		return "stop";
	if (a & UNITS_RESTART)
		return "restart";
	return NULL;
}

int units_plan_format(const struct units_plan *plan, char **ret)
{
	static const char *const labels[] = { "restart", "stop", "remove", "restart requested", "superseded",
					      "held back" };
	struct sbuf b = {};
	size_t unchanged = 0;

	for (size_t g = 0; g < ELEMENTSOF(labels); g++) {
		bool first = true;
		for (size_t i = 0; i < plan->n; i++) {
			const char *group = summary_group(&plan->items[i].e);
			if (!group || strcmp(group, labels[g]) != 0)
				continue;
			if (first)
				sbuf_addf(&b, "%s%s:", b.len ? "; " : "", labels[g]);
			sbuf_addf(&b, " %s", plan->items[i].e.unit);
			first = false;
		}
	}
	for (size_t i = 0; i < plan->n; i++)
		if ((plan->items[i].e.actions & ~(UNITS_HELD | UNITS_MODE)) == 0 && plan->items[i].e.held == 0 &&
		    plan->items[i].e.new)
			unchanged++;
	if (unchanged)
		sbuf_addf(&b, "%sunchanged: %zu", b.len ? "; " : "", unchanged);
	if (!b.len)
		sbuf_addf(&b, "nothing to do");
	if (b.failed) {
		free(b.s);
		return -ENOMEM;
	}
	*ret = b.s;
	return 0;
}

/* ---- apply ------------------------------------------------------------ */

struct unit_run {
	bool disk_changed;          /* a file of this unit was written or removed */
	bool failed;                /* a file or enable step failed: no job for it */
	bool drift;                 /* rewritten although the OSC did not change it */
	bool job_ran;               /* a restart/stop job was issued */
	bool job_done;              /* ... and ended "done" */
	enum systemd_verb job_verb; /* ... which one */
	bool superseded_active;     /* a gardener-user unit (from GNA) is running */
	bool superseded_enabled;    /* ... or enabled */
};

struct apply {
	const struct units_plan *plan;
	int sysfd;                  /* <root>/etc/systemd/system */
	sd_bus *bus;
	unsigned timeout_ms;
	uid_t uid;
	gid_t gid;
	char *own_unit;             /* the unit we run in (never restarted by us) */
	struct unit_run *run;
	struct sbuf errors;
	size_t n_failed;
	bool reload;                /* something on disk changed */
};

/* Records and logs (once) that unit i failed; job_result: the job's result
 * for a failed job, else NULL. A failed restart request is only logged, as a
 * warning: as with gardener-node-agent, a bad or failing name in the Node's
 * annotation must not fail the apply of the OSC (and be retried forever). */
static void unit_failed(struct apply *a, size_t i, int error, const char *job_result, const char *fmt, ...)
	_printf_(5, 6);
static void unit_failed(struct apply *a, size_t i, int error, const char *job_result, const char *fmt, ...)
{
	const char *unit = a->plan->items[i].e.unit;
	_cleanup_free_ char *what = NULL;
	char field[300], field_result[64];
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) < 0)
		what = NULL;
	va_end(ap);
	bool request = a->plan->items[i].e.actions & UNITS_REQUESTED;
	snprintf(field, sizeof(field), "UNIT=%s", unit);
	snprintf(field_result, sizeof(field_result), "JOB_RESULT=%s", job_result ? job_result : "");
	log_fields_errno(request ? LOG_WARNING : LOG_ERR, error,
			 job_result ? LOG_FIELDS(field, field_result) : LOG_FIELDS(field), "%s: %s%s", unit,
			 request ? "requested " : "", what ? what : "failed");
	if (request)
		return;
	a->run[i].failed = true;
	a->n_failed++;
	sbuf_addf(&a->errors, "%s%s: %s", a->errors.len ? "; " : "", unit, what ? what : "failed");
	if (error < 0)
		sbuf_addf(&a->errors, ": %s", strerror(-error));
}

/* Removes dirfd/name when it is a regular file (an admin's symlink or mask
 * is not ours). Returns 1 removed, 0 nothing there, -errno. */
static int remove_regular(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(st.st_mode)) {
		log_debug("%s: not a regular file, left alone", name);
		return 0;
	}
	if (unlinkat(dirfd, name, 0) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

static int dropin_dir_name(const char *unit, char *buf, size_t size)
{
	int k = snprintf(buf, size, "%s.d", unit);
	return k < 0 || (size_t)k >= size ? -ENAMETOOLONG : 0;
}

/* Removes the drop-ins that o lists and n does not (n may be NULL: all of
 * them); with rmdir_if_empty also the .d directory once it is empty. */
static void remove_dropins(struct apply *a, size_t i, const struct osc_unit *o, const struct osc_unit *n,
			   bool rmdir_if_empty)
{
	char dname[300];
	_cleanup_close_ int dfd = -1;
	bool removed = false;
	int r;

	if (dropin_dir_name(o->name, dname, sizeof(dname)) < 0)
		return;
	dfd = fsx_open_dir_at(a->sysfd, dname, 0, 0);
	if (dfd == -ENOENT)
		return;
	if (dfd < 0) {
		unit_failed(a, i, dfd, NULL, "opening /%s/%s", UNITS_DIR, dname);
		return;
	}
	for (size_t k = 0; k < o->n_dropins; k++) {
		if (n && find_dropin(n, o->dropins[k].name))
			continue;
		r = remove_regular(dfd, o->dropins[k].name);
		if (r < 0) {
			unit_failed(a, i, r, NULL, "removing drop-in /%s/%s/%s", UNITS_DIR, dname, o->dropins[k].name);
			continue;
		}
		if (r > 0) {
			log_info("Removed drop-in /%s/%s/%s", UNITS_DIR, dname, o->dropins[k].name);
			removed = true;
		}
	}
	if (removed)
		(void)fsx_fsync_dir(dfd);
	if (rmdir_if_empty) {
		if (unlinkat(a->sysfd, dname, AT_REMOVEDIR) == 0)
			removed = true;
		else if (errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
			log_debug("rmdir /%s/%s: %m", UNITS_DIR, dname);
	}
	if (removed) {
		a->run[i].disk_changed = true;
		a->reload = true;
	}
}

static void remove_unit_file(struct apply *a, size_t i, const char *unit)
{
	int r = remove_regular(a->sysfd, unit);
	if (r < 0) {
		unit_failed(a, i, r, NULL, "removing /%s/%s", UNITS_DIR, unit);
		return;
	}
	if (r > 0) {
		log_info("Removed unit file /%s/%s", UNITS_DIR, unit);
		a->run[i].disk_changed = a->reload = true;
	}
}

/* True when dirfd/name is a regular file holding exactly content. */
static bool same_content(int dirfd, const char *name, const char *content)
{
	_cleanup_free_ char *data = NULL;
	size_t len, want = strlen(content);

	if (fsx_read_at(dirfd, name, want, &data, &len) < 0)
		return false;
	return len == want && memcmp(data, content, len) == 0;
}

/* Makes dirfd/name hold content (mode 0644, root). Returns 1 when the bytes
 * changed, 2 when only a wrong mode or owner was fixed (not a change:
 * systemd reads the same definition, so no reload and no restart), 0 when
 * all was right already, -errno. */
static int write_unit_file(struct apply *a, int dirfd, const char *name, const char *content)
{
	bool same = same_content(dirfd, name, content);
	int r = fsx_write_atomic_at(dirfd, name, content, strlen(content), UNIT_FILE_MODE, a->uid, a->gid,
				    FSX_SKIP_IF_SAME);
	if (r < 0)
		return r;
	if (r > 0 && same)
		return 2;
	return r > 0;
}

/* Writes the unit file and drop-ins of n where they differ. */
static void write_unit_files(struct apply *a, size_t i, const struct osc_unit *n)
{
	char dname[300];
	bool written = false, fixed = false;
	int r;

	if (n->content) {
		r = write_unit_file(a, a->sysfd, n->name, n->content);
		if (r < 0) {
			unit_failed(a, i, r, NULL, "writing /%s/%s", UNITS_DIR, n->name);
			return;
		}
		written |= r == 1;
		fixed |= r == 2;
	}
	if (n->n_dropins > 0) {
		_cleanup_close_ int dfd = -1;
		r = dropin_dir_name(n->name, dname, sizeof(dname));
		if (r >= 0)
			r = dfd = fsx_open_dir_at(a->sysfd, dname, FSX_MKDIR, DROPIN_DIR_MODE);
		if (r < 0) {
			unit_failed(a, i, r, NULL, "creating /%s/%s", UNITS_DIR, dname);
			return;
		}
		for (size_t k = 0; k < n->n_dropins; k++) {
			const struct osc_dropin *d = &n->dropins[k];
			r = write_unit_file(a, dfd, d->name, d->content);
			if (r < 0) {
				unit_failed(a, i, r, NULL, "writing /%s/%s/%s", UNITS_DIR, dname, d->name);
				return;
			}
			written |= r == 1;
			fixed |= r == 2;
		}
	}
	if (fixed)
		log_info("Fixed the mode or owner of the files of %s", n->name);
	if (written) {
		log_info("Wrote unit %s", n->name);
		a->run[i].disk_changed = a->reload = true;
	}
}

static void apply_files(struct apply *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct units_plan_entry *e = &a->plan->items[i].e;
		if ((e->actions & (UNITS_REQUESTED | UNITS_SUPERSEDED | UNITS_HELD)) || a->run[i].failed)
			continue;
		if (!e->new) {
			/* Dropped by the OSC. */
			if (e->actions & UNITS_REMOVE) {
				remove_dropins(a, i, e->old, NULL, true);
				remove_unit_file(a, i, e->unit);
			} else if (e->actions & UNITS_REMOVE_DROPINS) {
				remove_dropins(a, i, e->old, NULL, false);
			}
			continue;
		}
		write_unit_files(a, i, e->new);
		if (a->run[i].failed)
			continue;
		if ((e->actions & UNITS_REMOVE_DROPINS) && e->old)
			remove_dropins(a, i, e->old, e->new, e->old->content && e->new->n_dropins == 0);
		if (e->actions & UNITS_REMOVE)
			remove_unit_file(a, i, e->unit);
		/* Drift: the OSC did not change the unit, but its files on disk
		 * differed. Restart it so what runs is what the OSC says. */
		if (a->run[i].disk_changed &&
		    ((e->actions & UNITS_DRIFT) || !(e->actions & (UNITS_RESTART | UNITS_STOP)))) {
			char field[300];
			snprintf(field, sizeof(field), "UNIT=%s", e->unit);
			log_fields(LOG_NOTICE, LOG_FIELDS(field), "%s: files on disk differed from the OSC, rewritten",
				   e->unit);
			/* Planned (units_plan_add_drift()), or found only now. */
			a->run[i].drift = !(e->actions & (UNITS_RESTART | UNITS_STOP));
		}
	}
}

static void apply_enable(struct apply *a, bool dropped)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct units_plan_entry *e = &a->plan->items[i].e;
		_cleanup_free_ char *msg = NULL;
		bool enable = e->actions & UNITS_ENABLE, changed = false;
		int r;

		if (!(e->actions & (UNITS_ENABLE | UNITS_DISABLE)) || (e->actions & UNITS_REQUESTED) ||
		    !e->new != dropped || a->run[i].failed)
			continue;
		r = enable ? systemd_enable_unit(a->bus, e->unit, &changed, &msg) :
			     systemd_disable_unit(a->bus, e->unit, &changed, &msg);
		if (r < 0) {
			unit_failed(a, i, 0, NULL, "%s failed: %s", enable ? "enable" : "disable", msg ? msg : strerror(-r));
			continue;
		}
		if (changed) {
			log_info("%s %s", enable ? "Enabled" : "Disabled", e->unit);
			a->run[i].disk_changed = a->reload = true;
		}
	}
}

enum job_phase {
	PHASE_DROPPED,              /* stop the dropped units we created, and
				     * superseded units found on disk */
	PHASE_UNITS,                /* restart / stop of new, changed, drifted, dropped OS units */
	PHASE_REQUESTS,             /* restart requests */
};

static bool wants_job(const struct apply *a, size_t i, enum job_phase phase, enum systemd_verb *ret)
{
	const struct units_plan_entry *e = &a->plan->items[i].e;
	unsigned act = e->actions;

	if (a->run[i].failed || (act & UNITS_HELD))
		return false;
	if (act & UNITS_SUPERSEDED) {
		if (phase != PHASE_DROPPED || !a->run[i].superseded_active)
			return false;
		*ret = SYSTEMD_STOP;
		return true;
	}
	switch (phase) {
	case PHASE_DROPPED:
		if (e->new || !(act & UNITS_REMOVE) || !(act & UNITS_STOP))
			return false;
		*ret = SYSTEMD_STOP;
		return true;
	case PHASE_UNITS:
		if (act & UNITS_REQUESTED)
			return false;
		if (!e->new) {
			if (!(act & UNITS_RESTART))
				return false;
			*ret = SYSTEMD_RESTART;
			return true;
		}
		if (a->run[i].drift)
			act |= unit_stops(e->new) ? UNITS_STOP : UNITS_RESTART;
		if (act & UNITS_STOP)
			*ret = SYSTEMD_STOP;
		else if (act & UNITS_RESTART)
			*ret = SYSTEMD_RESTART;
		else
			return false;
		return true;
	case PHASE_REQUESTS:
		if (!(act & UNITS_REQUESTED) || !(act & UNITS_RESTART))
			return false;
		*ret = SYSTEMD_RESTART;
		return true;
	}
	return false;
}

static int run_phase(struct apply *a, enum job_phase phase)
{
	size_t n = 0;
	_cleanup_free_ struct systemd_job *jobs = calloc(a->plan->n ? a->plan->n : 1, sizeof(*jobs));
	_cleanup_free_ size_t *idx = calloc(a->plan->n ? a->plan->n : 1, sizeof(*idx));
	int r;

	if (!jobs || !idx)
		return -ENOMEM;
	for (size_t i = 0; i < a->plan->n; i++) {
		enum systemd_verb verb;
		if (!wants_job(a, i, phase, &verb))
			continue;
		if (a->own_unit && strcmp(a->own_unit, a->plan->items[i].e.unit) == 0) {
			log_warning("%s: not %s: cloud-config-exec runs in it", a->own_unit,
				    verb == SYSTEMD_STOP ? "stopping" : "restarting");
			continue;
		}
		jobs[n] = (struct systemd_job){ .unit = a->plan->items[i].e.unit, .verb = verb };
		idx[n++] = i;
	}
	if (n == 0)
		return 0;

	r = systemd_run_jobs(a->bus, jobs, n, a->timeout_ms);
	for (size_t k = 0; k < n; k++) {
		struct systemd_job *j = &jobs[k];
		const struct units_plan_entry *e = &a->plan->items[idx[k]].e;
		const char *verb = systemd_verb_to_string(j->verb);
		char field_unit[300], field_result[64];

		/* A job was queued (it may have failed or be late); a call that
		 * systemd refused changed nothing. */
		a->run[idx[k]].job_ran = j->error == 0 || j->error == -EIO || j->error == -ETIMEDOUT;
		a->run[idx[k]].job_done = j->error == 0;
		a->run[idx[k]].job_verb = j->verb;
		snprintf(field_unit, sizeof(field_unit), "UNIT=%s", e->unit);
		snprintf(field_result, sizeof(field_result), "JOB_RESULT=%s", j->result ? j->result : "none");
		if (j->error == 0) {
			log_fields(LOG_INFO, LOG_FIELDS(field_unit, field_result), "%s %s (%s%s): done in %.1f ms",
				   j->verb == SYSTEMD_STOP ? "Stopped" : "Restarted", e->unit, e->reason,
				   a->run[idx[k]].drift || (e->actions & UNITS_DRIFT) ? ", drift repaired" : "",
				   (double)j->usec / 1000.0);
		} else if (j->error == -ENOENT && phase != PHASE_REQUESTS && (!e->new || phase == PHASE_DROPPED)) {
			/* Dropped or superseded, and already gone (Gardener PR #8898): fine. */
			log_debug("%s: %s: unit no longer exists", e->unit, verb);
		} else if (j->error == -EIO) {
			unit_failed(a, idx[k], 0, j->result, "%s failed (job result '%s')", verb, j->result);
		} else if (j->error == -ETIMEDOUT) {
			unit_failed(a, idx[k], 0, NULL, "%s timed out after %u ms", verb, a->timeout_ms);
		} else if (j->error == -ENOENT) {
			unit_failed(a, idx[k], 0, NULL, "%s failed: unit not found", verb);
		} else {
			unit_failed(a, idx[k], j->message ? 0 : j->error, NULL, "%s failed%s%s", verb,
				    j->message ? ": " : "", j->message ? j->message : "");
		}
		systemd_job_done(j);
	}
	return r == -EIO ? 0 : r;
}

static int changed_units(const struct apply *a, char ***ret)
{
	_cleanup_strv_free_ char **v = calloc(a->plan->n + 1, sizeof(char *));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->plan->n; i++) {
		const char *unit = a->plan->items[i].e.unit;
		bool dup = false;
		if (!a->run[i].disk_changed && !a->run[i].job_ran)
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = strcmp(v[k], unit) == 0;
		if (dup)
			continue;
		v[n] = strdup(unit);
		if (!v[n])
			return -ENOMEM;
		n++;
	}
	qsort(v, n, sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}

/* The bash gardener-user units that the OSC carries are superseded: we
 * never write, enable or start them. On a node that gardener-node-agent
 * configured before, they are on disk, enabled and armed, and the path unit
 * would run the script that overwrites authorized_keys whenever the key file
 * changes, fighting the keys step. Such copies are stopped (phase
 * PHASE_DROPPED) and disabled, never removed (we did not write them). */
static void find_superseded(struct apply *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct units_plan_entry *e = &a->plan->items[i].e;
		_cleanup_free_ char *active = NULL, *file_state = NULL;
		struct stat st;
		if ((e->actions & (UNITS_SUPERSEDED | UNITS_REQUESTED)) != UNITS_SUPERSEDED || !e->new ||
		    fstatat(a->sysfd, e->unit, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (systemd_unit_state(a->bus, e->unit, &active, NULL, NULL) >= 0)
			a->run[i].superseded_active = strcmp(active, "inactive") != 0 && strcmp(active, "failed") != 0;
		if (systemd_unit_file_state(a->bus, e->unit, &file_state) >= 0)
			a->run[i].superseded_enabled = strncmp(file_state, "enabled", 7) == 0;
	}
}

static void disable_superseded(struct apply *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct units_plan_entry *e = &a->plan->items[i].e;
		_cleanup_free_ char *msg = NULL;
		bool changed = false;
		char field[300];
		if (!a->run[i].superseded_active && !a->run[i].superseded_enabled)
			continue;
		if (a->run[i].superseded_enabled && systemd_disable_unit(a->bus, e->unit, &changed, &msg) < 0) {
			unit_failed(a, i, 0, NULL, "disabling the superseded unit failed: %s", msg ? msg : "?");
			continue;
		}
		if (changed)
			a->run[i].disk_changed = a->reload = true;
		snprintf(field, sizeof(field), "UNIT=%s", e->unit);
		log_fields(LOG_NOTICE, LOG_FIELDS(field), "%s: %s; the copy found on disk is %s", e->unit,
			   superseded_reason(e->unit),
			   a->run[i].superseded_active ? (changed ? "stopped and disabled" : "stopped") : "disabled");
	}
}

/* A dropped unit whose process died of the stop stays "failed" in the
 * manager (and the system "degraded") even after its file is gone: forget
 * that state. Failures here are only logged: the unit is stopped. */
static void reset_dropped(struct apply *a)
{
	for (size_t i = 0; i < a->plan->n; i++) {
		const struct units_plan_entry *e = &a->plan->items[i].e;
		_cleanup_free_ char *msg = NULL;
		if (e->new || !(e->actions & UNITS_REMOVE) || a->run[i].failed)
			continue;
		if (systemd_reset_failed(a->bus, e->unit, &msg) < 0)
			log_warning("%s: reset-failed: %s", e->unit, msg ? msg : "failed");
	}
}

/* The sorted unique names of the units whose job of this verb ended "done". */
static int done_units(const struct apply *a, enum systemd_verb verb, char ***ret)
{
	_cleanup_strv_free_ char **v = calloc(a->plan->n + 1, sizeof(char *));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->plan->n; i++) {
		const char *unit = a->plan->items[i].e.unit;
		bool dup = false;
		if (!a->run[i].job_done || a->run[i].job_verb != verb)
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = strcmp(v[k], unit) == 0;
		if (dup)
			continue;
		if (!(v[n] = strdup(unit)))
			return -ENOMEM;
		n++;
	}
	qsort(v, n, sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}

int units_apply(const struct units_plan *plan, int rootfd, sd_bus *bus, unsigned job_timeout_ms,
		char ***ret_changed_units, char **ret_error)
{
	return units_apply_report(plan, rootfd, bus, job_timeout_ms, ret_changed_units, NULL, NULL, ret_error);
}

int units_apply_report(const struct units_plan *plan, int rootfd, sd_bus *bus, unsigned job_timeout_ms,
		       char ***ret_changed_units, char ***ret_restarted, char ***ret_stopped, char **ret_error)
{
	_cleanup_free_ struct unit_run *run = calloc(plan->n ? plan->n : 1, sizeof(*run));
	_cleanup_close_ int sysfd = -1;
	struct apply a = {
		.plan = plan,
		.bus = bus,
		.timeout_ms = job_timeout_ms ? job_timeout_ms : UNITS_JOB_TIMEOUT_MS_DEFAULT,
		.uid = geteuid() == 0 ? 0 : FSX_UID_KEEP,
		.gid = geteuid() == 0 ? 0 : FSX_GID_KEEP,
		.run = run,
	};
	_cleanup_free_ char *own_unit = NULL;
	int r;

	if (!run)
		return -ENOMEM;
	/* The way to the unit directory may pass a link only root can have
	 * made (fsx.h); the .d directories below it are opened strictly. */
	sysfd = fsx_open_dir_at(rootfd, UNITS_DIR, FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, DROPIN_DIR_MODE);
	if (sysfd < 0) {
		log_error_errno(sysfd, "Cannot open /%s below the root", UNITS_DIR);
		if (ret_error && asprintf(ret_error, "opening /%s: %s", UNITS_DIR, strerror(-sysfd)) < 0)
			*ret_error = NULL;
		return sysfd;
	}
	a.sysfd = sysfd;
	if (bus && sd_pid_get_unit(0, &own_unit) >= 0)
		a.own_unit = own_unit;

	r = 0;
	if (bus) {
		find_superseded(&a);
		r = run_phase(&a, PHASE_DROPPED);
		if (r >= 0) {
			reset_dropped(&a);
			apply_enable(&a, true);
			disable_superseded(&a);
		}
	}
	if (r >= 0) {
		apply_files(&a);
		if (bus)
			apply_enable(&a, false);
	}
	if (r >= 0 && bus && a.reload) {
		_cleanup_free_ char *msg = NULL;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = systemd_reload(bus, &msg);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (r < 0) {
			log_error("daemon-reload failed: %s", msg ? msg : strerror(-r));
			sbuf_addf(&a.errors, "%sdaemon-reload failed: %s", a.errors.len ? "; " : "",
				  msg ? msg : strerror(-r));
		} else {
			log_info("daemon-reload done in %.1f ms",
				 (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
		}
	}
	if (r >= 0 && bus)
		r = run_phase(&a, PHASE_UNITS);
	if (r >= 0 && bus)
		r = run_phase(&a, PHASE_REQUESTS);
	if (r < 0 && !a.errors.len)
		sbuf_addf(&a.errors, "systemd: %s", strerror(-r));
	if (r >= 0 && a.n_failed > 0)
		r = -EIO;
	if (a.errors.failed)
		r = -ENOMEM;

	if (ret_changed_units && r != -ENOMEM) {
		int k = changed_units(&a, ret_changed_units);
		if (k < 0)
			r = k;
	}
	if (ret_restarted && r != -ENOMEM) {
		int k = done_units(&a, SYSTEMD_RESTART, ret_restarted);
		if (k < 0)
			r = k;
	}
	if (ret_stopped && r != -ENOMEM) {
		int k = done_units(&a, SYSTEMD_STOP, ret_stopped);
		if (k < 0)
			r = k;
	}
	if (r < 0 && r != -ENOMEM && ret_error)
		*ret_error = TAKE_PTR(a.errors.s);
	free(a.errors.s);
	return r;
}

static bool mode_wrong(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return (st.st_mode & 07777) != UNIT_FILE_MODE || (geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0));
}

/* Whether the files of n that hold the right bytes have the wrong mode or
 * owner. */
static bool unit_modes_wrong(int sysfd, const struct osc_unit *n)
{
	if (sysfd < 0)
		return false;
	if (n->content && mode_wrong(sysfd, n->name))
		return true;
	char dname[300];
	if (n->n_dropins == 0 || dropin_dir_name(n->name, dname, sizeof(dname)) < 0)
		return false;
	_cleanup_close_ int dfd = fsx_open_dir_at(sysfd, dname, 0, 0);
	for (size_t k = 0; dfd >= 0 && k < n->n_dropins; k++)
		if (mode_wrong(dfd, n->dropins[k].name))
			return true;
	return false;
}

/* 1 when a unit file or drop-in of n below sysfd does not hold what n
 * says (missing, other bytes), 0 when all do. */
static int unit_files_differ(int sysfd, const struct osc_unit *n)
{
	if (sysfd < 0)
		return 1;
	if (n->content && !same_content(sysfd, n->name, n->content))
		return 1;
	if (n->n_dropins == 0)
		return 0;
	char dname[300];
	if (dropin_dir_name(n->name, dname, sizeof(dname)) < 0)
		return 1;
	_cleanup_close_ int dfd = fsx_open_dir_at(sysfd, dname, 0, 0);
	if (dfd < 0)
		return 1;
	for (size_t k = 0; k < n->n_dropins; k++)
		if (!same_content(dfd, n->dropins[k].name, n->dropins[k].content))
			return 1;
	return 0;
}

int units_plan_add_drift(struct units_plan *plan, int rootfd)
{
	_cleanup_close_ int sysfd = fsx_open_dir_at(rootfd, UNITS_DIR, FSX_FOLLOW_ROOT_SYMLINKS, 0);
	for (size_t i = 0; i < plan->n; i++) {
		struct plan_item *it = &plan->items[i];
		const struct units_plan_entry *e = &it->e;
		if (!e->new || (e->actions & (UNITS_REQUESTED | UNITS_SUPERSEDED | UNITS_HELD | UNITS_RESTART | UNITS_STOP)) ||
		    (!e->new->content && e->new->n_dropins == 0))
			continue;
		if (!unit_files_differ(sysfd, e->new)) {
			if (unit_modes_wrong(sysfd, e->new)) {
				char *reason = strdup("mode or owner of its files wrong: fixed, no restart");
				if (!reason)
					return -ENOMEM;
				free(it->reason);
				it->reason = reason;
				it->e.reason = reason;
				it->e.actions |= UNITS_MODE;
			}
			continue;
		}
		char *reason = strdup("files on disk differ from the OSC");
		if (!reason)
			return -ENOMEM;
		free(it->reason);
		it->reason = reason;
		it->e.reason = reason;
		it->e.actions |= UNITS_WRITE | UNITS_DRIFT | (unit_stops(e->new) ? UNITS_STOP : UNITS_RESTART);
	}
	return 0;
}
