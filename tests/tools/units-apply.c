/* units-apply: test-only driver of the systemd half of an apply.
 *
 *   units-apply [--root DIR] [--old OSC] [--changed PATH]... [--restart UNIT]...
 *               [--owned-from OSC]... [--timeout-ms N] [--no-bus] NEW-OSC
 *   units-apply --state UNIT
 *
 *
 * Plans old -> new (units_plan_compute), prints the plan ("plan: <summary>"
 * and one "entry: unit actions reason" line per entry), applies it
 * (units_apply) below --root; --owned-from OSC adds the unit paths that OSC
 * writes (units_owned_paths) to the ownership record the plan is computed
 * with (units_plan_compute_owned), as if an apply of it had failed; against the system bus (DBUS_SYSTEM_BUS_ADDRESS
 * points it at an nspawn box), and prints "changed: <units>" and, on failure,
 * "error: <line>" plus "apply_ms: N". Exit 0 on success, 1 when the apply
 * failed, 2 on usage or input errors. --state prints "UNIT ActiveState
 * LoadState ActiveEnterTimestampMonotonic" as systemd_unit_state() reads
 * them (LoadUnit, so also for units nothing refers to). Until `cloud-config-exec apply` exists,
 * tests/integration/030-exec-systemd.sh drives units_apply() with this. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "cleanup.h"
#include "fsx.h"
#include "log.h"
#include "osc.h"
#include "../../cloud-config-exec/systemd.h"
#include "../../cloud-config-exec/units.h"

#define MAX_ARGS 64

static int load_osc(const char *path, struct osc *ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *data = NULL;
	struct osc_error err = {};
	size_t len;
	int r;

	if (fd < 0)
		return log_error_errno(-errno, "Cannot open %s", path);
	r = fsx_read_fd(fd, OSC_INPUT_MAX, &data, &len);
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", path);
	r = osc_parse(data, len, NULL, ret, &err);
	if (r < 0)
		return log_error_errno(r, "%s: %s", path, err.message);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "root", required_argument, NULL, 'r' },     { "old", required_argument, NULL, 'o' },
		{ "changed", required_argument, NULL, 'c' },  { "restart", required_argument, NULL, 'R' },
		{ "timeout-ms", required_argument, NULL, 't' }, { "no-bus", no_argument, NULL, 'n' },
		{ "owned-from", required_argument, NULL, 'O' },
		{ "state", required_argument, NULL, 's' },
		{}
	};
	const char *root = NULL, *old_path = NULL;
	char *changed[MAX_ARGS + 1] = {}, *restart[MAX_ARGS + 1] = {};
	const char *owned_from[MAX_ARGS] = {};
	size_t n_changed = 0, n_restart = 0, n_owned_from = 0;
	char *owned[4096 + 1] = {};
	size_t n_owned = 0;
	unsigned long timeout_ms = 0;
	bool use_bus = true;
	struct osc old = {}, new = {};
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	_cleanup_free_ char *summary = NULL, *error = NULL;
	_cleanup_strv_free_ char **changed_units = NULL;
	_cleanup_close_ int rootfd = -1;
	sd_bus *bus = NULL;
	struct timespec t0, t1;
	int c, r;

	log_open("units-apply", LOG_TARGET_STDERR);
	while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
		switch (c) {
		case 'r':
			root = optarg;
			break;
		case 'o':
			old_path = optarg;
			break;
		case 'c':
			if (n_changed == MAX_ARGS)
				return 2;
			changed[n_changed++] = optarg;
			break;
		case 'R':
			if (n_restart == MAX_ARGS)
				return 2;
			restart[n_restart++] = optarg;
			break;
		case 't': {
			char *end;
			errno = 0;
			timeout_ms = strtoul(optarg, &end, 10);
			if (errno || *end || timeout_ms > 3600000)
				return 2;
			break;
		}
		case 'n':
			use_bus = false;
			break;
		case 's': {
			_cleanup_free_ char *active = NULL, *load = NULL;
			uint64_t ts = 0;
			r = systemd_open(&bus);
			if (r >= 0)
				r = systemd_unit_state(bus, optarg, &active, &load, &ts);
			if (bus)
				sd_bus_flush_close_unref(bus);
			if (r < 0)
				return log_error_errno(r, "Cannot read the state of %s", optarg), 1;
			printf("%s %s %s %" PRIu64 "\n", optarg, active, load, ts);
			return 0;
		}
		case 'O':
			if (n_owned_from == MAX_ARGS)
				return 2;
			owned_from[n_owned_from++] = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: units-apply [--root DIR] [--old OSC] [--changed PATH]... [--restart UNIT]... "
				"[--timeout-ms N] [--no-bus] NEW-OSC\n");
		return 2;
	}
	if ((old_path && load_osc(old_path, &old) < 0) || load_osc(argv[optind], &new) < 0)
		return 2;
	for (size_t i = 0; i < n_owned_from; i++) {
		struct osc o = {};
		_cleanup_strv_free_ char **paths = NULL;
		if (load_osc(owned_from[i], &o) < 0)
			return 2;
		r = units_owned_paths(&o, &paths);
		osc_done(&o);
		if (r < 0)
			return 2;
		for (char **q = paths; *q; q++) {
			if (n_owned == ELEMENTSOF(owned) - 1)
				return 2;
			owned[n_owned++] = TAKE_PTR(*q);
		}
	}
	r = units_plan_compute_owned(old_path ? &old : NULL, &new, changed, restart, n_owned_from ? owned : NULL,
				     &plan);
	if (r >= 0)
		r = units_plan_format(plan, &summary);
	if (r < 0)
		return log_error_errno(r, "Cannot compute the plan"), 2;
	printf("plan: %s\n", summary);
	for (size_t i = 0; i < units_plan_size(plan); i++) {
		const struct units_plan_entry *e = units_plan_get(plan, i);
		char actions[96];
		printf("entry: %s %s %s\n", e->unit, units_actions_to_string(e->actions, actions, sizeof(actions)),
		       e->reason);
	}
	rootfd = fsx_open_root(root);
	if (rootfd < 0)
		return log_error_errno(rootfd, "Cannot open root %s", root ? root : "/"), 2;
	if (use_bus) {
		r = systemd_open(&bus);
		if (r < 0)
			return log_error_errno(r, "Cannot connect to the system bus"), 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = units_apply(plan, rootfd, bus, (unsigned)timeout_ms, &changed_units, &error);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("changed:");
	for (char **u = changed_units; u && *u; u++)
		printf(" %s", *u);
	printf("\n");
	if (r < 0)
		printf("error: %s\n", error ? error : strerror(-r));
	printf("apply_ms: %.1f\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (bus)
		sd_bus_flush_close_unref(bus);
	osc_done(&old);
	osc_done(&new);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	return r < 0 ? 1 : 0;
}
