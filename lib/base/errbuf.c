/* The parsers' error message buffer; see errbuf.h. */
#include <stdio.h>

#include "errbuf.h"

int errbuf_set(char *err, size_t errlen, int r, const char *fmt, ...)
{
	if (err && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}
