/* libFuzzer target for lib/node/result.c: result.json is written by
 * cloud-config-exec but read by node-agent as outside input (a compromised
 * or buggy executor, a damaged disk). Never a crash or a leak; what parses
 * respects the ceilings and formats back to a document that parses to the
 * same values (the round trip the executor's no-op check relies on). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "osc.h"
#include "result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(char **v)
{
	size_t n = 0;
	while (v && v[n]) {
		if (!osc_unit_name_is_valid(v[n]))
			abort();
		n++;
	}
	if (n > RESULT_CHANGED_UNITS_MAX)
		abort();
	return n;
}

static void same_strv(char **a, char **b)
{
	if (count(a) != count(b))
		abort();
	for (size_t i = 0; a && a[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result r;
	if (result_parse((const char *)data, size, &r, NULL) < 0)
		return 0;
	if (r.units_ready.present &&
	    (!r.units_ready.message || strlen(r.units_ready.message) > RESULT_CONDITION_MESSAGE_MAX ||
	     strlen(r.units_ready.reason) == 0 || strlen(r.units_ready.reason) > RESULT_REASON_MAX))
		abort();
	char *out = NULL;
	size_t len;
	if (result_format(&r, &out, &len) < 0)
		abort();
	struct result back;
	if (result_parse(out, len, &back, NULL) < 0)
		abort();
	if (strcmp(back.checksum, r.checksum) != 0 || back.generation != r.generation || back.success != r.success ||
	    back.units_ready.present != r.units_ready.present || back.units_ready.ready != r.units_ready.ready ||
	    (r.units_ready.present && (strcmp(back.units_ready.message, r.units_ready.message) != 0 ||
				       strcmp(back.units_ready.reason, r.units_ready.reason) != 0 ||
				       back.units_ready.checked_at != r.units_ready.checked_at)))
		abort();
	if (back.inplace.present != r.inplace.present || back.inplace.kinds != r.inplace.kinds ||
	    back.inplace.state != r.inplace.state || (r.inplace.present && r.inplace.kinds == 0) ||
	    !!back.inplace.reason != !!r.inplace.reason || (r.inplace.reason && strcmp(back.inplace.reason, r.inplace.reason)) ||
	    !!back.inplace.os_desired != !!r.inplace.os_desired ||
	    (r.inplace.os_desired && (strcmp(back.inplace.os_desired, r.inplace.os_desired) ||
				      strcmp(back.inplace.os_running, r.inplace.os_running))))
		abort();
	same_strv(r.restarted_units, back.restarted_units);
	same_strv(r.stopped_units, back.stopped_units);
	count(r.changed_units);
	result_done(&back);
	result_done(&r);
	free(out);
	return 0;
}
