/* Thin wrappers around the system manager's D-Bus API (sd-bus).
 *
 * Only what an apply needs: Reload, EnableUnitFiles/DisableUnitFiles,
 * LoadUnit + unit properties, and Start/Restart/StopUnit jobs that are waited
 * for through the JobRemoved signal with a deadline. Every method call has a
 * deadline (SYSTEMD_CALL_TIMEOUT_USEC). The functions log at debug level only;
 * D-Bus errors come back as -errno plus, where a caller reports them, a
 * malloc'ed message ("org.freedesktop.systemd1.NoSuchUnit: Unit x not found."). */
#ifndef CCE_SYSTEMD_H
#define CCE_SYSTEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sd_bus;

#define SYSTEMD_CALL_TIMEOUT_USEC (30ull * 1000000ull)

/* Connects to the system bus (sd_bus_open_system(), so
 * DBUS_SYSTEM_BUS_ADDRESS is honoured: tests point it at an nspawn box).
 * Returns 0 and a bus in *ret (release with sd_bus_flush_close_unref()). */
int systemd_open(struct sd_bus **ret);

/* Manager.Reload (daemon-reload). */
int systemd_reload(struct sd_bus *bus, char **ret_error);

/* EnableUnitFiles([unit], runtime=false, force=true) and
 * DisableUnitFiles([unit], runtime=false). *ret_changed (may be NULL) is
 * set when symlinks were created or removed. */
int systemd_enable_unit(struct sd_bus *bus, const char *unit, bool *ret_changed, char **ret_error);
int systemd_disable_unit(struct sd_bus *bus, const char *unit, bool *ret_changed, char **ret_error);

/* GetUnitFileState: "enabled", "disabled", "static", "masked", ... (malloc'ed). */
int systemd_unit_file_state(struct sd_bus *bus, const char *unit, char **ret_state);

/* ResetFailedUnit: forget a unit's failed state (a dropped unit whose
 * process died on stop would otherwise linger as "failed"). A unit systemd
 * does not know is fine (returns 0). */
int systemd_reset_failed(struct sd_bus *bus, const char *unit, char **ret_error);

/* LoadUnit (GetUnit fails for a unit nothing refers to yet) and reads
 * ActiveState, LoadState and ActiveEnterTimestampMonotonic (us). Strings are
 * malloc'ed; any output pointer may be NULL. */
int systemd_unit_state(struct sd_bus *bus, const char *unit, char **ret_active_state,
		       char **ret_load_state, uint64_t *ret_active_enter_monotonic);

/* The manager's SystemState ("running", "degraded", "stopping", ...) into
 * buf. Returns 0 or -errno; logs nothing. */
int systemd_manager_state(struct sd_bus *bus, char *buf, size_t size);

/* The manager's UserspaceTimestamp (CLOCK_REALTIME us when this boot's
 * user space started): fixed for a boot, another in the next one. Returns
 * 0, -ENODATA when it is 0, or -errno; logs nothing. */
int systemd_userspace_timestamp(struct sd_bus *bus, uint64_t *ret);

/* What the SystemdUnitsReady check needs of a unit (unitcheck.h). */
struct systemd_unit_probe {
	char active_state[32];      /* "active", "failed", "activating", ... */
	char sub_state[32];         /* "running", "dead", "auto-restart", ... */
	uint64_t state_change_usec; /* StateChangeTimestamp, CLOCK_REALTIME us */
	char service_type[32];      /* Service.Type of a .service, else "" */
	bool triggered;             /* TriggeredBy is not empty */
};

/* LoadUnit, then ActiveState, SubState, StateChangeTimestamp, TriggeredBy
 * and, for a .service, Service.Type. A unit LoadUnit refuses gives its
 * -errno (the caller's "not loaded"). Fills *ret only on success. */
int systemd_unit_probe(struct sd_bus *bus, const char *unit, struct systemd_unit_probe *ret);

enum systemd_verb {
	SYSTEMD_START,
	SYSTEMD_RESTART,
	SYSTEMD_STOP,
};

/* One job for systemd_run_jobs(): the caller fills unit and verb; the rest
 * is output (release with systemd_job_done()). */
struct systemd_job {
	const char *unit;           /* borrowed */
	enum systemd_verb verb;
	/* outputs */
	int error;                  /* 0: the job finished with result "done";
				     * -EIO: another job result; -ETIMEDOUT: no
				     * JobRemoved before the deadline; -ENOENT:
				     * the unit does not exist (NoSuchUnit);
				     * other -errno: the call failed */
	char *result;               /* job result ("done", "failed", "canceled",
				     * "timeout", "dependency", "skipped", ...),
				     * NULL when there was no job */
	char *message;              /* the D-Bus error of a failed call, or NULL */
	uint64_t usec;              /* from the call until JobRemoved */
};

/* Subscribes to the manager's signals (once per connection; an existing
 * subscription is fine), watches JobRemoved, calls <Verb>Unit(unit,
 * "replace") for every job in turn, then waits until each job was removed or
 * timeout_ms passed since its call. Returns 0 when every job ended "done",
 * -EIO when at least one did not (see each job's error), another -errno when
 * the bus failed (then the jobs not yet decided carry that error). */
int systemd_run_jobs(struct sd_bus *bus, struct systemd_job *jobs, size_t n, unsigned timeout_ms);

void systemd_job_done(struct systemd_job *job);

const char *systemd_verb_to_string(enum systemd_verb verb);

#endif
