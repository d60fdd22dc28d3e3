/* authkeys-cmd's I/O; see io.h. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "io.h"

int akc_open_snapshot(const char *root, const char *path, struct snapshot **ret, const char **reterr_what)
{
	_cleanup_close_ int rootfd = fsx_open_root(root);
	if (rootfd < 0) {
		*reterr_what = "root directory";
		return rootfd;
	}
	const char *name;
	_cleanup_close_ int dirfd = fsx_open_parent_at(rootfd, path, 0, 0, &name);
	if (dirfd < 0) {
		*reterr_what = "directory";
		return dirfd;
	}
	_cleanup_close_ int fd = RET_NERRNO(openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
	if (fd < 0) {
		*reterr_what = "open";
		return fd;
	}
	/* Only root can have written it: see snapshot.h on integrity. */
	return snapshot_open_fd(fd, 0, ret, reterr_what);
}

int akc_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t k = write(fd, buf, len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE)
				return 0;
			return negerrno();
		}
		buf += k;
		len -= (size_t)k;
	}
	return 0;
}
