/* libFuzzer target for the restart request the agent reads from its own
 * Node's annotation worker.gardener.cloud/restart-systemd-services
 * (node_parse_restart() in agent/node.c, compiled into this target the way
 * wireguard-tools' fuzzers include the file they test). Any bytes up to the
 * first NUL are the annotation value. On success every name must be a valid
 * unit name, unique, and there are 1..DESIRED_RESTART_UNITS_MAX of them; on
 * -EINVAL the message names something. Never a crash or a leak. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/node.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = strndup((const char *)data, size);
	if (!value)
		return 0;
	char **units = NULL;
	char bad[64] = "";
	int r = node_parse_restart(value, &units, bad, sizeof(bad));
	if (r == 0) {
		size_t n = 0;
		for (; units[n]; n++) {
			if (!osc_unit_name_is_valid(units[n]))
				abort();
			for (size_t i = 0; i < n; i++)
				if (strcmp(units[i], units[n]) == 0)
					abort();
		}
		if (n < 1 || n > DESIRED_RESTART_UNITS_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			free(units[i]);
		free(units);
	} else if (units) {
		abort();
	} else if (r == -EINVAL && bad[0] == '\0' && value[0] != '\0') {
		/* A refusal names the item (an empty item is skipped, not refused). */
		abort();
	} else if (r != -EINVAL && r != -ENODATA && r != -E2BIG && r != -ENOMEM) {
		abort();
	}
	free(value);
	return 0;
}
