/* libFuzzer target for config_parse(): any bytes, never a crash or a leak;
 * on success the result must carry every default, and config_each()
 * (--check-config's table, which parses the bytes again) lists it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(const char *name, const char *value, bool in_file, void *userdata)
{
	(void)value;
	if (!name || !*name)
		abort();
	*(unsigned *)userdata += in_file;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[256];
	if (config_parse((const char *)data, size, &c, err, sizeof(err)) == 0) {
		if (!c.state_dir || !c.exec_state_dir || !c.secret_namespace || !c.login_user)
			abort();
		unsigned n = 0;
		(void)config_each(&c, (const char *)data, size, count, &n);
		config_done(&c);
	}
	return 0;
}
