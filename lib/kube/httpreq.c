/* Request heads of the healthz/metrics listener; see httpreq.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "httpreq.h"

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Where the head ends (just past the empty line), or 0 when it does not
 * end within data[0..len). */
static size_t head_end(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		/* "\n\n" or "\n\r\n" */
		if (i + 1 < len && data[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && data[i + 1] == '\r' && data[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The request line in data[0..n) (no line end). */
static int parse_line(const char *data, size_t n, struct httpreq *ret)
{
	struct httpreq r = {};
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)data[i]))
		i++;
	if (i == 0 || i > 16 || i >= n || data[i] != ' ')
		return -EINVAL;
	r.method = i == 3 && memcmp(data, "GET", 3) == 0    ? HTTPREQ_GET
		   : i == 4 && memcmp(data, "HEAD", 4) == 0 ? HTTPREQ_HEAD
							    : HTTPREQ_OTHER;
	size_t t = ++i;
	while (i < n && data[i] > 0x20 && data[i] < 0x7f)
		i++;
	if (i == t || data[t] != '/' || i >= n || data[i] != ' ')
		return -EINVAL;
	size_t plen = i - t;
	const char *q = memchr(data + t, '?', plen);
	if (q)
		plen = (size_t)(q - (data + t));
	if (plen > HTTPREQ_PATH_MAX)
		return -EMSGSIZE;
	memcpy(r.path, data + t, plen);
	r.path[plen] = '\0';
	i++;
	if (n - i != 8 || memcmp(data + i, "HTTP/1.", 7) != 0 || data[i + 7] < '0' || data[i + 7] > '9')
		return -EINVAL;
	r.minor = (unsigned)(data[i + 7] - '0');
	*ret = r;
	return 0;
}

int httpreq_parse(const char *data, size_t len, struct httpreq *ret)
{
	if (len > HTTPREQ_MAX)
		len = HTTPREQ_MAX;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f)
			return -EINVAL;
	}
	/* The request line, as soon as it is there. */
	const char *nl = memchr(data, '\n', len);
	if (nl) {
		size_t n = (size_t)(nl - data);
		if (n > 0 && data[n - 1] == '\r')
			n--;
		struct httpreq r;
		int k = parse_line(data, n, &r);
		if (k < 0)
			return k;
		/* A request line alone ("GET / HTTP/1.0\n\n" has its empty line). */
		if (head_end(data, len) == 0)
			return len >= HTTPREQ_MAX ? -EMSGSIZE : -EAGAIN;
		*ret = r;
		return 0;
	}
	return len >= HTTPREQ_MAX ? -EMSGSIZE : -EAGAIN;
}
