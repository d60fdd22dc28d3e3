/* libFuzzer target for config_parse(): any bytes, never a crash or a leak;
 * on success the result must carry every default. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[256];
	if (config_parse((const char *)data, size, &c, err, sizeof(err)) == 0) {
		if (!c.state_dir || !c.exec_state_dir || !c.secret_namespace || !c.login_user)
			abort();
		config_done(&c);
	}
	return 0;
}
