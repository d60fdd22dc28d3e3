/* libFuzzer target for lib/node/pacing.c. The input is a delay annotation value
 * (up to the first newline) and then up to two OSC documents separated by
 * a line "---8<---". The delay parser never crashes and stays within its
 * ceiling; the restart decision of an OSC against itself is always "no
 * restart", against nothing (a first apply) it is "restart" exactly when
 * the OSC has a unit that is not exempt, and never a crash for a pair. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "osc.h"
#include "pacing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_counted_unit(const struct osc *o)
{
	for (size_t i = 0; i < o->n_units; i++)
		if (!pacing_unit_is_exempt(o->units[i].name))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *nl = memchr(s, '\n', size);
	size_t dlen = nl ? (size_t)(nl - s) : size;
	char value[PACING_DELAY_VALUE_MAX + 2];
	if (dlen < sizeof(value)) {
		memcpy(value, s, dlen);
		value[dlen] = '\0';
		uint64_t ms;
		if (pacing_parse_delay(value, &ms) == 0 && ms > PACING_DELAY_MAX_MS)
			abort();
	}
	if (!nl)
		return 0;
	const char *a = nl + 1;
	size_t alen = size - dlen - 1;
	const char *cut = memmem(a, alen, "\n---8<---\n", 10);
	const char *b = cut ? cut + 10 : NULL;
	size_t blen = cut ? alen - (size_t)(b - a) : 0;
	if (cut)
		alen = (size_t)(cut - a);

	struct osc o1 = {}, o2 = {};
	struct osc_error err;
	char why[256];
	bool ok1 = osc_parse(a, alen, "/var/lib/node-agent", &o1, &err) == 0;
	bool ok2 = b && osc_parse(b, blen, "/var/lib/node-agent", &o2, &err) == 0;
	if (ok1) {
		if (pacing_restarts_units(&o1, &o1, why, sizeof(why)))
			abort();
		if (pacing_restarts_units(NULL, &o1, why, sizeof(why)) != has_counted_unit(&o1))
			abort();
	}
	if (ok1 && ok2) {
		(void)pacing_restarts_units(&o1, &o2, why, sizeof(why));
		(void)pacing_restarts_units(&o2, &o1, why, sizeof(why));
	}
	osc_done(&o1);
	osc_done(&o2);
	return 0;
}
