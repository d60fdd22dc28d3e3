/* Writing into a user's home; see home.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "home.h"
#include "log.h"

#define AUTHORIZED_KEYS "authorized_keys"

static int refuse(const struct account *a, int r, const char *what)
{
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", a->name);
	return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ufield), "Refusing to write the SSH keys of %s: %s", a->name,
				what);
}

/* For the log only: the decision was already taken on the fd. */
static bool is_symlink(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

int home_open_ssh(int rootfd, const struct account *a)
{
	if (!fsx_path_is_safe(a->home, 4096) || strcmp(a->home, "/") == 0)
		return refuse(a, -EINVAL, "home directory path is not a normalised absolute path below /");

	const char *name;
	_cleanup_close_ int parent = fsx_open_parent_at(rootfd, a->home, 0, 0, &name);
	if (parent < 0)
		return refuse(a, parent, "cannot open the parent of the home directory without following symlinks");
	struct stat st;
	if (fstat(parent, &st) < 0)
		return refuse(a, negerrno(), "cannot stat the parent of the home directory");
	if (st.st_uid != 0)
		return refuse(a, -EPERM, "the parent of the home directory is not owned by root");

	_cleanup_close_ int home = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (home < 0) {
		int r = negerrno();
		return refuse(a, r, is_symlink(parent, name) ? "the home directory is a symlink" :
				    "home directory missing or not a directory");
	}
	if (fstat(home, &st) < 0)
		return refuse(a, negerrno(), "cannot stat the home directory");
	if (st.st_uid != a->uid && st.st_uid != 0)
		return refuse(a, -EPERM, "home directory is owned by another user");

	int ssh = openat(home, ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ssh < 0 && errno == ENOENT) {
		if (mkdirat(home, ".ssh", 0700) < 0 && errno != EEXIST)
			return refuse(a, negerrno(), "cannot create ~/.ssh");
		ssh = openat(home, ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (ssh < 0) {
		int r = negerrno();
		return refuse(a, r, is_symlink(home, ".ssh") ? "~/.ssh is a symlink" :
				    r == -ENOTDIR ? "~/.ssh is not a directory" : "cannot open ~/.ssh");
	}
	_cleanup_close_ int sshfd = ssh;
	if (fstat(sshfd, &st) < 0)
		return refuse(a, negerrno(), "cannot stat ~/.ssh");
	if (st.st_uid != a->uid || st.st_gid != a->gid) {
		/* Through the fd: whatever the user renames, this is the directory we opened. */
		if (fchown(sshfd, a->uid, a->gid) < 0)
			return refuse(a, negerrno(), "cannot fix the owner of ~/.ssh");
		char ufield[64];
		snprintf(ufield, sizeof(ufield), "USER=%s", a->name);
		log_fields(LOG_NOTICE, LOG_FIELDS(ufield), "Fixed the owner of ~%s/.ssh (was uid %u)", a->name,
			   (unsigned)st.st_uid);
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(sshfd, 0700) < 0)
		return refuse(a, negerrno(), "cannot fix the mode of ~/.ssh");
	return TAKE_FD(sshfd);
}

int home_read_keys(int sshfd, const struct account *a, char **ret, size_t *ret_len, const char **ret_ignored,
		   bool *ret_keys_only)
{
	const char *ignored = NULL;
	char *empty = NULL;
	_cleanup_close_ int fd = openat(sshfd, AUTHORIZED_KEYS, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0) {
		if (errno == ENOENT)
			ignored = NULL;
		else if (errno == ELOOP)
			ignored = "a symlink";
		else if (errno == ENXIO)
			ignored = "a socket or FIFO without writer";
		else
			return refuse(a, negerrno(), "cannot open ~/.ssh/authorized_keys");
		goto empty;
	}
	if (fstat(fd, &st) < 0)
		return refuse(a, negerrno(), "cannot stat ~/.ssh/authorized_keys");
	if (S_ISDIR(st.st_mode))
		return refuse(a, -EISDIR, "~/.ssh/authorized_keys is a directory");
	if (!S_ISREG(st.st_mode)) {
		ignored = "not a regular file";
		goto empty;
	}
	if (st.st_nlink != 1) {
		ignored = "a hard link";
		goto empty;
	}
	if (st.st_uid != a->uid && st.st_uid != 0) {
		ignored = "owned by another user";
		goto empty;
	}
	/* The user can make the file as large as they like (a sparse file
	 * costs nothing): a refusal, not a failing disk. */
	if ((size_t)st.st_size > HOME_KEYS_MAX)
		return refuse(a, -EMSGSIZE, "~/.ssh/authorized_keys is larger than the ceiling, left alone");
	int r = fsx_read_fd(fd, HOME_KEYS_MAX, ret, ret_len);
	if (r == -EFBIG) /* grew while we read it */
		r = -EMSGSIZE;
	if (r < 0)
		return refuse(a, r, "cannot read ~/.ssh/authorized_keys");
	*ret_ignored = NULL;
	*ret_keys_only = st.st_uid != a->uid;
	return 1;
empty:
	empty = calloc(1, 1);
	if (!empty)
		return -ENOMEM;
	*ret = empty;
	*ret_len = 0;
	*ret_ignored = ignored;
	*ret_keys_only = false;
	return 1;
}

int home_write_keys(int sshfd, const struct account *a, const char *data, size_t len)
{
	struct stat st;
	if (fstatat(sshfd, AUTHORIZED_KEYS, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return refuse(a, -EISDIR, "~/.ssh/authorized_keys is a directory");
	int r = fsx_write_atomic_at(sshfd, AUTHORIZED_KEYS, data, len, 0600, a->uid, a->gid, FSX_SKIP_IF_SAME);
	if (r < 0)
		return refuse(a, r, "cannot replace ~/.ssh/authorized_keys");
	return r;
}
