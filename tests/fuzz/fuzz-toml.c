/* libFuzzer target for lib/node/toml.c: containerd's config.toml is read
 * (an OS image's, or one anybody with root left) and patched by the root
 * executor. Never a crash or a leak; what parses formats to a document that
 * parses again and formats to the same text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml_node *t = NULL, *back = NULL;
	char err[TOML_ERROR_MAX];
	if (toml_parse((const char *)data, size, &t, err, sizeof(err)) < 0)
		return 0;
	char *a = NULL, *b = NULL;
	if (toml_format(t, &a) < 0) {
		toml_free(t);
		return 0; /* a datetime the writer will not write */
	}
	if (toml_parse(a, strlen(a), &back, err, sizeof(err)) < 0 || toml_format(back, &b) < 0 || strcmp(a, b) != 0)
		abort();
	struct toml_node *c = toml_copy(t);
	if (!c)
		abort();
	toml_free(c);
	toml_free(back);
	toml_free(t);
	free(a);
	free(b);
	return 0;
}
