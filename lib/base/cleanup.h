/* Scope-bound cleanup and explicit ownership transfer.
 *
 * A small subset of systemd's idioms: a variable declared with one of the
 * _cleanup_*_ attributes is released when it leaves scope; TAKE_PTR() and
 * TAKE_FD() hand ownership on and leave the variable empty, so the cleanup
 * becomes a no-op. Destructors accept NULL / -1. */
#ifndef NA_CLEANUP_H
#define NA_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Returns the value of p and sets p to NULL (or the type's zero). */
#define TAKE_PTR(p)                                                     \
	({                                                              \
		__typeof__(p) *_pp_ = &(p);                             \
		__typeof__(p) _p_ = *_pp_;                              \
		*_pp_ = NULL;                                           \
		_p_;                                                    \
	})

#define TAKE_FD(fd)                                                     \
	({                                                              \
		int *_fdp_ = &(fd);                                     \
		int _fd_ = *_fdp_;                                      \
		*_fdp_ = -1;                                            \
		_fd_;                                                   \
	})

/* Defines static inline void funcp(type *p) calling func(*p) when non-NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                         \
	static inline void func##p(type *p)                             \
	{                                                               \
		if (*p)                                                 \
			func(*p);                                       \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/* Frees a NULL-terminated array of strings and the array itself. */
static inline void strv_free(char **v)
{
	if (!v)
		return;
	for (char **s = v; *s; s++)
		free(*s);
	free(v);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Converts a libc "-1 and errno" result into -errno (never 0 on failure). */
static inline int negerrno(void)
{
	return errno > 0 ? -errno : -EIO;
}
#define RET_NERRNO(expr)                                                \
	({                                                              \
		long _r_ = (long)(expr);                                \
		_r_ < 0 ? negerrno() : (int)_r_;                        \
	})

#endif
