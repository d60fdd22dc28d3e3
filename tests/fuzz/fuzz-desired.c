/* libFuzzer target for desired_parse() and result_parse(): any bytes, never
 * a crash or a leak; every accepted document formats again, and the
 * formatted text parses back to the same values (a fixed point after one
 * round). A rejected document always names the field. Every accepted
 * desired.json whose OSC parses also goes through the executor's bounds
 * (cloud-config-exec/bounds.c, compiled into this target): a refusal
 * always says why. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "desired.h"
#include "osc.h"
#include "result.h"

#include "../../cloud-config-exec/bounds.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool strv_equal(char **a, char **b)
{
	if (!a || !b)
		return a == b;
	for (; *a && *b; a++, b++)
		if (strcmp(*a, *b) != 0)
			return false;
	return !*a && !*b;
}

static bool str_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void desired_round_trip(const char *data, size_t size)
{
	struct desired d;
	const char *err = NULL;
	if (desired_parse(data, size, &d, &err) < 0) {
		if (!err || !*err)
			abort();
		return;
	}
	struct osc o;
	struct osc_error oe;
	if (osc_parse(d.osc, d.osc_len, "/var/lib/cloud-config-exec", &o, &oe) >= 0) {
		struct bounds b = { .exec_state_dir = "/var/lib/cloud-config-exec",
				    .snapshot_path = "/var/lib/cloud-config-exec/authkeys.snap", .osc = &o, .last = &o };
		char berr[BOUNDS_ERROR_MAX];
		int r = bounds_check(&d, &b, berr, sizeof(berr));
		if ((r < 0 && r != -ENOMEM && !berr[0]) || (r >= 0 && berr[0]))
			abort();
		osc_done(&o);
	}
	char *out = NULL;
	size_t len;
	if (desired_format(&d, &out, &len) < 0)
		abort();
	struct desired e;
	if (desired_parse(out, len, &e, &err) < 0)
		abort();
	if (strcmp(d.checksum, e.checksum) != 0 || d.osc_len != e.osc_len || memcmp(d.osc, e.osc, d.osc_len) != 0 ||
	    !str_equal(d.key_document, e.key_document) || d.ssh_access != e.ssh_access ||
	    !str_equal(d.restart_id, e.restart_id) || !strv_equal(d.restart_units, e.restart_units) ||
	    d.generation != e.generation || d.inplace_present != e.inplace_present ||
	    d.inplace_ready != e.inplace_ready)
		abort();
	char *again = NULL;
	if (desired_format(&e, &again, NULL) < 0 || strcmp(again, out) != 0)
		abort();
	free(again);
	free(out);
	desired_done(&d);
	desired_done(&e);
}

static void result_round_trip(const char *data, size_t size)
{
	struct result r;
	const char *err = NULL;
	if (result_parse(data, size, &r, &err) < 0) {
		if (!err || !*err)
			abort();
		return;
	}
	char *out = NULL;
	size_t len;
	if (result_format(&r, &out, &len) < 0)
		abort();
	struct result s;
	if (result_parse(out, len, &s, &err) < 0)
		abort();
	/* changedUnits is always written, so absent comes back as empty. */
	bool units_ok = strv_equal(r.changed_units, s.changed_units) ||
			(!r.changed_units && s.changed_units && !s.changed_units[0]);
	if (strcmp(r.checksum, s.checksum) != 0 || r.generation != s.generation || r.success != s.success ||
	    !str_equal(r.failed_step, s.failed_step) || !str_equal(r.error, s.error) || !units_ok ||
	    !str_equal(r.restart_id, s.restart_id) || r.finished_at != s.finished_at ||
	    r.inplace.present != s.inplace.present || r.inplace.kinds != s.inplace.kinds ||
	    r.inplace.state != s.inplace.state || !str_equal(r.inplace.reason, s.inplace.reason) ||
	    !str_equal(r.inplace.os_desired, s.inplace.os_desired) || !str_equal(r.inplace.os_running, s.inplace.os_running))
		abort();
	free(out);
	result_done(&r);
	result_done(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	desired_round_trip((const char *)data, size);
	result_round_trip((const char *)data, size);
	return 0;
}
