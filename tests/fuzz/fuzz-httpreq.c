/* libFuzzer target for lib/kube/httpreq.c, the request heads node-agent's
 * healthz/metrics listener reads (agent/httpd.c). Never a crash; a head
 * accepted has a path that starts with "/", holds no '?' and fits; and the
 * listener's incremental use is sound: when the whole input is accepted,
 * every prefix is either accepted the same way or "need more" (-EAGAIN),
 * never refused. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct httpreq r;
	int k = httpreq_parse(s, size, &r);
	if (k != 0 && k != -EAGAIN && k != -EINVAL && k != -EMSGSIZE)
		abort();
	if (k == -EAGAIN && size >= HTTPREQ_MAX)
		abort();
	if (k != 0)
		return 0;
	size_t plen = strlen(r.path);
	if (r.path[0] != '/' || plen > HTTPREQ_PATH_MAX || strchr(r.path, '?') || r.minor > 9 ||
	    (r.method != HTTPREQ_GET && r.method != HTTPREQ_HEAD && r.method != HTTPREQ_OTHER))
		abort();
	for (size_t n = 0; n < size && n <= HTTPREQ_MAX; n += 1 + n / 8) {
		struct httpreq p;
		int kp = httpreq_parse(s, n, &p);
		if (kp == 0 && (p.method != r.method || strcmp(p.path, r.path) != 0 || p.minor != r.minor))
			abort();
		if (kp != 0 && kp != -EAGAIN)
			abort();
	}
	return 0;
}
