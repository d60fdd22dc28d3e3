/* authkeys-cmd's I/O: opening the snapshot and writing the answer. */
#ifndef AKC_IO_H
#define AKC_IO_H

#include <stddef.h>

#include "snapshot.h"

/* Opens path (absolute) below root (NULL: "/") one component at a time
 * without following symlinks, checks the fd (regular, owned by root, not
 * group/world-writable) and maps and verifies the snapshot. Returns 0,
 * -ENOENT when there is none, or snapshot_open_fd()'s error with
 * *reterr_what set. */
int akc_open_snapshot(const char *root, const char *path, struct snapshot **ret, const char **reterr_what);

/* Writes all of buf to fd, retrying short writes and EINTR. A reader that
 * went away (EPIPE, SIGPIPE being ignored) is success: sshd stops reading
 * once it has what it needs. Returns 0 or -errno. */
int akc_write_all(int fd, const char *buf, size_t len);

#endif
