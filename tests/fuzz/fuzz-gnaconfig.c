/* libFuzzer target for gnaconfig_parse(), gna_kubeconfig_client(),
 * gna_zone_parse() and gna_machine_name_parse(): any
 * bytes, never a crash or a leak; what is accepted holds its invariants. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsx.h"
#include "gnaconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gnaconfig g;
	char err[GNACONFIG_ERROR_MAX];
	if (gnaconfig_parse((const char *)data, size, &g, err, sizeof(err)) == 0) {
		if (g.server && strncmp(g.server, "https://", 8) != 0)
			abort();
		if (g.ca_file && !fsx_path_is_safe(g.ca_file, PATH_MAX))
			abort();
		if (g.n_token_syncs > GNACONFIG_SYNCS_MAX)
			abort();
		for (size_t i = 0; i < g.n_token_syncs; i++)
			if (!g.token_syncs[i].secret_name || !fsx_path_is_safe(g.token_syncs[i].path, PATH_MAX))
				abort();
		gnaconfig_done(&g);
	}
	char *cert = NULL, *key = NULL;
	size_t cl = 0, kl = 0;
	if (gna_kubeconfig_client((const char *)data, size, &cert, &cl, &key, &kl, err, sizeof(err)) == 0) {
		if (!cert || !key)
			abort();
		free(cert);
		free(key);
	}
	char *zone = NULL;
	if (gna_zone_parse((const char *)data, size, &zone) == 0) {
		if (!gna_label_value_is_valid(zone) || !*zone)
			abort();
		free(zone);
	}
	char *name = NULL;
	if (gna_machine_name_parse((const char *)data, size, &name, err, sizeof(err)) == 0) {
		size_t n = strlen(name);
		if (n == 0 || n > GNA_MACHINE_NAME_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] >= 0x7f)
				abort();
		free(name);
	}
	return 0;
}
