/* libFuzzer target for lib/node/ctrdhealth.c: containerd-health.json is
 * written by cloud-config-exec's containerd probe but read by node-agent as
 * outside input, and ctr's output is read by the probe. Never a crash or a
 * leak; what parses formats back to a document that parses to the same
 * values, and a server version found respects its rules. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctrdhealth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char v[CTRDHEALTH_VERSION_MAX + 1];
	if (ctrdhealth_server_version(text, v) == 0 && (strlen(v) == 0 || strlen(v) > CTRDHEALTH_VERSION_MAX))
		abort();
	free(text);

	struct ctrdhealth h;
	if (ctrdhealth_parse((const char *)data, size, &h, NULL) < 0)
		return 0;
	char *out = NULL;
	size_t len;
	if (ctrdhealth_format(&h, &out, &len) < 0)
		abort();
	struct ctrdhealth back;
	if (ctrdhealth_parse(out, len, &back, NULL) < 0)
		abort();
	if (back.healthy != h.healthy || back.checked_at != h.checked_at ||
	    strcmp(back.server_version, h.server_version) != 0 || strcmp(back.error, h.error) != 0)
		abort();
	free(out);
	return 0;
}
