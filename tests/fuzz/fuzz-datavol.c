/* libFuzzer target for lib/node/datavol.c. The input goes, whole, to each of
 * the three parsers of outside text (blkid's export output,
 * /proc/self/mountinfo, /proc/swaps); none crashes, each stays within its
 * ceilings, and a probe that parses drives datavol_pick(): a disk whose
 * probe found anything is never picked. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datavol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct datavol_probe p;
	if (datavol_parse_probe(s, size, &p) == 0) {
		if (strlen(p.type) >= DATAVOL_VALUE_MAX || strlen(p.pttype) >= DATAVOL_VALUE_MAX ||
		    strlen(p.label) >= DATAVOL_VALUE_MAX)
			abort();
		struct datavol_disk d = { .size = 4096, .probe = p };
		memcpy(d.name, "sdb", 4);
		datavol_disk_type(d.name, 0, d.type, sizeof(d.type));
		const char *const types[] = { "disk", NULL };
		size_t k = 0;
		enum datavol_verdict v = datavol_pick(&d, 1, 4096, types, &k);
		if (p.found && v == DATAVOL_PICKED)
			abort();
		if (!p.found && v != DATAVOL_PICKED)
			abort();
	}
	uint64_t devs[64];
	size_t n = 99;
	if (datavol_parse_mountinfo(s, size, devs, 64, &n) == 0 && n > 64)
		abort();
	char names[16][DATAVOL_NAME_MAX + 1];
	if (datavol_parse_swaps(s, size, names, 16, &n) == 0) {
		if (n > 16)
			abort();
		for (size_t i = 0; i < n; i++)
			if (strlen(names[i]) > DATAVOL_NAME_MAX)
				abort();
	}
	return 0;
}
