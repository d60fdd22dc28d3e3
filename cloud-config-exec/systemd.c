/* sd-bus wrappers for the system manager (see systemd.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "cleanup.h"
#include "log.h"
#include "systemd.h"

#define DEST "org.freedesktop.systemd1"
#define PATH "/org/freedesktop/systemd1"
#define MANAGER "org.freedesktop.systemd1.Manager"
#define UNIT_IFACE "org.freedesktop.systemd1.Unit"


static inline void bus_error_freep(sd_bus_error *e)
{
	sd_bus_error_free(e);
}
#define _cleanup_bus_error_ _cleanup_(bus_error_freep)

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* "Name: message" of a D-Bus error, or strerror(-r) when there is none. */
static char *error_text(const sd_bus_error *e, int r)
{
	char *s = NULL;
	int k;

	if (sd_bus_error_is_set(e))
		k = asprintf(&s, "%s: %s", e->name, e->message ? e->message : "(no message)");
	else
		k = asprintf(&s, "%s", strerror(r < 0 ? -r : EIO));
	return k < 0 ? NULL : s;
}

static void set_error(char **ret_error, const sd_bus_error *e, int r)
{
	if (ret_error)
		*ret_error = error_text(e, r);
}

int systemd_open(sd_bus **ret)
{
	sd_bus *bus = NULL;
	int r = sd_bus_open_system(&bus);
	if (r < 0)
		return r;
	*ret = bus;
	return 0;
}

static int call(sd_bus *bus, const char *method, sd_bus_error *e, sd_bus_message **reply, const char *types,
		...)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	va_list ap;
	int r;

	r = sd_bus_message_new_method_call(bus, &m, DEST, PATH, MANAGER, method);
	if (r < 0)
		return r;
	if (types) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
		if (r < 0)
			return r;
	}
	return sd_bus_call(bus, m, SYSTEMD_CALL_TIMEOUT_USEC, e, reply);
}

int systemd_reload(sd_bus *bus, char **ret_error)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = call(bus, "Reload", &e, NULL, NULL);
	if (r < 0)
		set_error(ret_error, &e, r);
	return r;
}

int systemd_unit_file_state(sd_bus *bus, const char *unit, char **ret_state)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	const char *state;
	int r = call(bus, "GetUnitFileState", &e, &reply, "s", unit);
	if (r >= 0)
		r = sd_bus_message_read(reply, "s", &state);
	if (r < 0)
		return r;
	*ret_state = strdup(state);
	return *ret_state ? 0 : -ENOMEM;
}

int systemd_reset_failed(sd_bus *bus, const char *unit, char **ret_error)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = call(bus, "ResetFailedUnit", &e, NULL, "s", unit);
	if (r < 0 && sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
		return 0;
	if (r < 0)
		set_error(ret_error, &e, r);
	return r;
}

/* Reads the a(sss) list of changes; returns their count. */
static int count_changes(sd_bus_message *reply, const char *unit)
{
	const char *type, *from, *to;
	int r, n = 0;

	r = sd_bus_message_enter_container(reply, 'a', "(sss)");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_read(reply, "(sss)", &type, &from, &to)) > 0) {
		log_debug("%s: %s %s -> %s", unit, type, from, to);
		n++;
	}
	if (r < 0)
		return r;
	r = sd_bus_message_exit_container(reply);
	return r < 0 ? r : n;
}

static int unit_files_call(sd_bus *bus, const char *unit, bool enable, bool *ret_changed, char **ret_error)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	char *files[] = { (char *)(uintptr_t)unit, NULL };
	int carries = 0, r;

	r = sd_bus_message_new_method_call(bus, &m, DEST, PATH, MANAGER,
					   enable ? "EnableUnitFiles" : "DisableUnitFiles");
	if (r >= 0)
		r = sd_bus_message_append_strv(m, files);
	/* runtime=false; for enable force=true: replace conflicting symlinks. */
	if (r >= 0)
		r = enable ? sd_bus_message_append(m, "bb", 0, 1) : sd_bus_message_append(m, "b", 0);
	if (r >= 0)
		r = sd_bus_call(bus, m, SYSTEMD_CALL_TIMEOUT_USEC, &e, &reply);
	if (r >= 0 && enable)
		r = sd_bus_message_read(reply, "b", &carries);
	if (r >= 0)
		r = count_changes(reply, unit);
	if (r < 0) {
		set_error(ret_error, &e, r);
		return r;
	}
	if (ret_changed)
		*ret_changed = r > 0;
	return 0;
}

int systemd_enable_unit(sd_bus *bus, const char *unit, bool *ret_changed, char **ret_error)
{
	return unit_files_call(bus, unit, true, ret_changed, ret_error);
}

int systemd_disable_unit(sd_bus *bus, const char *unit, bool *ret_changed, char **ret_error)
{
	return unit_files_call(bus, unit, false, ret_changed, ret_error);
}

int systemd_unit_state(sd_bus *bus, const char *unit, char **ret_active_state, char **ret_load_state,
		       uint64_t *ret_active_enter_monotonic)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_free_ char *path = NULL, *active = NULL, *load = NULL;
	const char *p;
	uint64_t ts = 0;
	int r;

	/* GetUnit fails for a unit nothing refers to yet; LoadUnit does not. */
	r = call(bus, "LoadUnit", &e, &reply, "s", unit);
	if (r < 0)
		return r;
	r = sd_bus_message_read(reply, "o", &p);
	if (r < 0)
		return r;
	path = strdup(p);
	if (!path)
		return -ENOMEM;
	if (ret_active_state) {
		r = sd_bus_get_property_string(bus, DEST, path, UNIT_IFACE, "ActiveState", &e, &active);
		if (r < 0)
			return r;
	}
	if (ret_load_state) {
		r = sd_bus_get_property_string(bus, DEST, path, UNIT_IFACE, "LoadState", &e, &load);
		if (r < 0)
			return r;
	}
	if (ret_active_enter_monotonic) {
		r = sd_bus_get_property_trivial(bus, DEST, path, UNIT_IFACE, "ActiveEnterTimestampMonotonic", &e,
						't', &ts);
		if (r < 0)
			return r;
	}
	if (ret_active_state)
		*ret_active_state = TAKE_PTR(active);
	if (ret_load_state)
		*ret_load_state = TAKE_PTR(load);
	if (ret_active_enter_monotonic)
		*ret_active_enter_monotonic = ts;
	return 0;
}

static int get_string(sd_bus *bus, const char *path, const char *iface, const char *prop, char *buf, size_t size)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_free_ char *v = NULL;
	int r = sd_bus_get_property_string(bus, DEST, path, iface, prop, &e, &v);
	if (r < 0)
		return r;
	snprintf(buf, size, "%s", v);
	return 0;
}

int systemd_manager_state(sd_bus *bus, char *buf, size_t size)
{
	return get_string(bus, PATH, MANAGER, "SystemState", buf, size);
}

int systemd_userspace_timestamp(sd_bus *bus, uint64_t *ret)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	uint64_t ts = 0;
	int r = sd_bus_get_property_trivial(bus, DEST, PATH, MANAGER, "UserspaceTimestamp", &e, 't', &ts);
	if (r < 0)
		return r;
	if (ts == 0)
		return -ENODATA;
	*ret = ts;
	return 0;
}

int systemd_unit_probe(sd_bus *bus, const char *unit, struct systemd_unit_probe *ret)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *trig = NULL;
	_cleanup_free_ char *path = NULL;
	struct systemd_unit_probe p = {};
	const char *o;
	int r = call(bus, "LoadUnit", &e, &reply, "s", unit);
	if (r < 0)
		return r;
	if ((r = sd_bus_message_read(reply, "o", &o)) < 0)
		return r;
	if (!(path = strdup(o)))
		return -ENOMEM;
	if ((r = get_string(bus, path, UNIT_IFACE, "ActiveState", p.active_state, sizeof(p.active_state))) < 0 ||
	    (r = get_string(bus, path, UNIT_IFACE, "SubState", p.sub_state, sizeof(p.sub_state))) < 0)
		return r;
	r = sd_bus_get_property_trivial(bus, DEST, path, UNIT_IFACE, "StateChangeTimestamp", &e, 't',
					&p.state_change_usec);
	if (r < 0)
		return r;
	r = sd_bus_get_property(bus, DEST, path, UNIT_IFACE, "TriggeredBy", &e, &trig, "as");
	if (r < 0)
		return r;
	if ((r = sd_bus_message_enter_container(trig, 'a', "s")) < 0)
		return r;
	const char *t;
	r = sd_bus_message_read(trig, "s", &t);
	if (r < 0)
		return r;
	p.triggered = r > 0;
	size_t n = strlen(unit);
	if (n > 8 && strcmp(unit + n - 8, ".service") == 0 &&
	    (r = get_string(bus, path, DEST ".Service", "Type", p.service_type, sizeof(p.service_type))) < 0)
		return r;
	*ret = p;
	return 0;
}

const char *systemd_verb_to_string(enum systemd_verb verb)
{
	switch (verb) {
	case SYSTEMD_START:
		return "start";
	case SYSTEMD_RESTART:
		return "restart";
	case SYSTEMD_STOP:
		return "stop";
	}
	return "?";
}

static const char *verb_method(enum systemd_verb verb)
{
	switch (verb) {
	case SYSTEMD_START:
		return "StartUnit";
	case SYSTEMD_RESTART:
		return "RestartUnit";
	case SYSTEMD_STOP:
		return "StopUnit";
	}
	return NULL;
}

/* The jobs being waited for; JobRemoved signals are matched by object path. */
struct waiter {
	struct systemd_job *jobs;
	char **paths;               /* job object path per job, NULL: not waiting */
	uint64_t *started;
	size_t n;
	size_t pending;
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct waiter *w = userdata;
	const char *path, *unit, *result;
	uint32_t id;

	if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	for (size_t i = 0; i < w->n; i++) {
		struct systemd_job *j = &w->jobs[i];
		if (!w->paths[i] || strcmp(w->paths[i], path) != 0)
			continue;
		j->usec = now_usec() - w->started[i];
		j->result = strdup(result);
		j->error = strcmp(result, "done") == 0 ? 0 : -EIO;
		free(w->paths[i]);
		w->paths[i] = NULL;
		w->pending--;
		log_debug("job %s (%s %s) removed: %s after %.1f ms", path, verb_method(j->verb), unit, result,
			  (double)j->usec / 1000.0);
	}
	return 0;
}

static int subscribe(sd_bus *bus)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = call(bus, "Subscribe", &e, NULL, NULL);
	if (r < 0 && sd_bus_error_has_name(&e, "org.freedesktop.systemd1.AlreadySubscribed"))
		r = 0;
	return r;
}

/* Starts one job; on failure fills j->error and j->message. */
static void start_job(sd_bus *bus, struct waiter *w, size_t i)
{
	_cleanup_bus_error_ sd_bus_error e = SD_BUS_ERROR_NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct systemd_job *j = &w->jobs[i];
	const char *path;
	int r;

	w->started[i] = now_usec();
	r = call(bus, verb_method(j->verb), &e, &reply, "ss", j->unit, "replace");
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0) {
		w->paths[i] = strdup(path);
		r = w->paths[i] ? 0 : -ENOMEM;
	}
	if (r < 0) {
		if (sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
			r = -ENOENT;
		j->error = r;
		j->message = error_text(&e, r);
		return;
	}
	w->pending++;
}

int systemd_run_jobs(sd_bus *bus, struct systemd_job *jobs, size_t n, unsigned timeout_ms)
{
	_cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
	_cleanup_free_ char **paths = calloc(n ? n : 1, sizeof(char *));
	_cleanup_free_ uint64_t *started = calloc(n ? n : 1, sizeof(uint64_t));
	struct waiter w = { .jobs = jobs, .paths = paths, .started = started, .n = n };
	uint64_t timeout = (uint64_t)timeout_ms * 1000u;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		jobs[i] = (struct systemd_job){ .unit = jobs[i].unit, .verb = jobs[i].verb };
	if (!paths || !started)
		return -ENOMEM;
	if (n == 0)
		return 0;

	/* Match and Subscribe before the first call, so no JobRemoved is missed. */
	r = sd_bus_match_signal(bus, &slot, DEST, PATH, MANAGER, "JobRemoved", on_job_removed, &w);
	if (r >= 0)
		r = subscribe(bus);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			jobs[i].error = r;
		return r;
	}
	for (size_t i = 0; i < n; i++)
		start_job(bus, &w, i);

	while (w.pending > 0) {
		uint64_t now, deadline = UINT64_MAX;

		r = sd_bus_process(bus, NULL);
		if (r < 0)
			break;
		if (r > 0)
			continue;
		now = now_usec();
		for (size_t i = 0; i < n; i++) {
			if (!paths[i])
				continue;
			if (now >= started[i] + timeout) {
				jobs[i].error = -ETIMEDOUT;
				jobs[i].usec = now - started[i];
				log_debug("job %s (%s) not removed after %u ms", paths[i], jobs[i].unit, timeout_ms);
				free(paths[i]);
				paths[i] = NULL;
				w.pending--;
			} else if (started[i] + timeout < deadline) {
				deadline = started[i] + timeout;
			}
		}
		if (w.pending == 0)
			break;
		r = sd_bus_wait(bus, deadline - now);
		if (r < 0)
			break;
	}
	if (r < 0) {
		/* The bus went away: whatever is still pending is undecided. */
		for (size_t i = 0; i < n; i++)
			if (paths[i]) {
				jobs[i].error = r;
				free(paths[i]);
				paths[i] = NULL;
			}
		return r;
	}
	for (size_t i = 0; i < n; i++)
		if (jobs[i].error < 0)
			return -EIO;
	return 0;
}

void systemd_job_done(struct systemd_job *job)
{
	free(job->result);
	free(job->message);
	job->result = job->message = NULL;
}
