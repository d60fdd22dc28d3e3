/* Small string helpers the programs share. */
#ifndef NA_STRX_H
#define NA_STRX_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Replaces the string in *slot (freed) with a copy of v (NULL: none).
 * Returns 0, or -ENOMEM with *slot unchanged. */
static inline int strx_replace(char **slot, const char *v)
{
	char *n = NULL;
	if (v && !(n = strdup(v)))
		return -ENOMEM;
	free(*slot);
	*slot = n;
	return 0;
}

/* The value of a hex digit, or -1. */
static inline int strx_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Equal strings, or both NULL. */
static inline bool strx_eq(const char *x, const char *y)
{
	return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

#endif
