/* The request head a client sends node-agent's healthz and metrics
 * listener (agent/httpd.c), parsed from the bytes received so far. Pure: no
 * I/O, no allocation; the caller keeps at most HTTPREQ_MAX bytes in a fixed
 * buffer and calls httpreq_parse() again after each read.
 *
 * Accepted: "METHOD SP /path[?query] SP HTTP/1.x" CRLF (a bare LF too), then
 * header lines that are not looked at, up to the empty line. The head holds
 * no NUL or control character but tab, CR and LF. */
#ifndef NA_HTTPREQ_H
#define NA_HTTPREQ_H

#include <stddef.h>

#define HTTPREQ_MAX 1024
#define HTTPREQ_PATH_MAX 128

enum httpreq_method {
	HTTPREQ_GET,
	HTTPREQ_HEAD,
	HTTPREQ_OTHER,              /* a valid token, answered 405 */
};

struct httpreq {
	enum httpreq_method method;
	char path[HTTPREQ_PATH_MAX + 1]; /* without the query */
	unsigned minor;             /* HTTP/1.<minor> */
};

/* Looks at the len bytes received so far. Returns 0 and fills *ret when
 * they start with a complete head with a valid request line; -EAGAIN when
 * the head is not complete yet and may still be (nothing wrong so far,
 * len < HTTPREQ_MAX); -EMSGSIZE when no head ended within HTTPREQ_MAX bytes
 * or the path is longer than HTTPREQ_PATH_MAX; -EINVAL when the bytes
 * cannot become a valid head (reported as soon as that is known). */
int httpreq_parse(const char *data, size_t len, struct httpreq *ret);

#endif
