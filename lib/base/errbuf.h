/* The error convention of the parsers that explain themselves: the caller
 * passes a buffer err of errlen bytes (NULL or 0: no message wanted), the
 * parser formats what was wrong and where into it and returns a -errno.
 * (Parsers that only name a field use a static string: jsonx_fail().) */
#ifndef NA_ERRBUF_H
#define NA_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "cleanup.h"

/* Formats into err (always NUL-terminated when errlen > 0) and returns r. */
_printf_(4, 5) int errbuf_set(char *err, size_t errlen, int r, const char *fmt, ...);

#endif
