/* libFuzzer target for lib/node/inplace.c's parsers of outside input:
 * /etc/os-release as GetOSVersion reads it (the root filesystem an OS update
 * script wrote), RFC 3339 times, versions and quantities from the OSC. The
 * input is split at the first NUL: before it os-release, after it a line of
 * "a b" for the version helpers and the time/quantity parsers. Never a
 * crash; what is found is a dotted decimal within the ceiling. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inplace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	const char *nul = memchr(d, '\0', size);
	size_t n = nul ? (size_t)(nul - d) : size;
	char v[INPLACE_VERSION_MAX + 1];
	if (inplace_os_version(d, n, v, sizeof(v)) == 0) {
		if (!v[0] || v[0] < '0' || v[0] > '9')
			abort();
		for (const char *p = v; *p; p++)
			if (!((*p >= '0' && *p <= '9') || *p == '.'))
				abort();
		bool eq;
		if (inplace_version_equal(v, v, &eq) == 0 && !eq)
			abort();
	}
	if (!nul)
		return 0;
	char *rest = strndup(nul + 1, size - n - 1);
	if (!rest)
		return 0;
	char *b = strchr(rest, ' ');
	if (b)
		*b++ = '\0';
	bool x;
	(void)inplace_version_equal(rest, b ? b : rest, &x);
	(void)inplace_minor_differs(rest, b ? b : rest, &x);
	int64_t sec;
	int32_t ns;
	if (inplace_parse_time(rest, &sec, &ns) == 0 && (ns < 0 || ns > 999999999))
		abort();
	(void)inplace_quantity_is_valid(rest);
	free(rest);
	return 0;
}
