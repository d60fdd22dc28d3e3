/* Writing into a user's home; see home.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "home.h"
#include "label.h"
#include "log.h"

#define AUTHORIZED_KEYS "authorized_keys"
#define STRINGIFY_CEILING "1048576"
_Static_assert(HOME_KEYS_MAX == 1048576, "STRINGIFY_CEILING");

static int refuse(const struct account *a, char *why, size_t why_size, int r, const char *what)
{
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", a->name);
	snprintf(why, why_size, "%s: %s", what, strerror(-r));
	return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ufield), "Refusing to write the SSH keys of %s: %s", a->name,
				what);
}

int home_moved_name(const char *name, time_t now, uint64_t rnd, char *buf, size_t size)
{
	struct tm tm;
	if (!gmtime_r(&now, &tm))
		return -EINVAL;
	char ts[32];
	if (strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm) == 0)
		return -EINVAL;
	int n = snprintf(buf, size, "%s.node-agent-moved-%s-%016llx", name, ts, (unsigned long long)rnd);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A fresh moved-aside name for name. The user owns the directory and can
 * plant anything under any name they can predict (a hard link costs no
 * inode): 64 bits from getrandom() make the name one they cannot. */
static int fresh_name(const char *name, time_t now, char *buf, size_t size)
{
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return negerrno();
	return home_moved_name(name, now, rnd, buf, size);
}

/* How often a taken random name is retried: a collision means the user
 * guessed 64 random bits, so a few attempts are plenty; the bound only
 * keeps a broken getrandom() from looping. */
#define MOVE_ATTEMPTS 8

/* Renames dirfd/name (whatever it is: never opened, never followed) to a
 * fresh unpredictable name next to it; the new name goes to moved. */
static int move_aside(int dirfd, const char *name, time_t now, char *moved, size_t moved_size)
{
	for (unsigned attempt = 0; attempt < MOVE_ATTEMPTS; attempt++) {
		int r = fresh_name(name, now, moved, moved_size);
		if (r < 0)
			return r;
		if (renameat2(dirfd, name, dirfd, moved, RENAME_NOREPLACE) == 0)
			return fsx_fsync_dir(dirfd);
		if (errno != EEXIST)
			return negerrno();
	}
	return -EEXIST;
}

/* For the log only: the decision was already taken on the fd. */
static bool is_symlink(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

#define REFUSE(r, what) refuse(a, why, why_size, (r), (what))

int home_open_ssh(int rootfd, const struct account *a, time_t now, char *why, size_t why_size)
{
	if (!fsx_path_is_safe(a->home, 4096) || strcmp(a->home, "/") == 0)
		return REFUSE(-EINVAL, "home directory path is not a normalised absolute path below /");

	/* Above the home only root chooses the path: a link root made there
	 * (an image's home -> var/home) is followed, as for the OSC's files;
	 * the home itself and everything below it are opened strictly. Not
	 * following it would leave the real ~/.ssh with keys that were
	 * dropped. */
	const char *name;
	_cleanup_close_ int parent = fsx_open_parent_at(rootfd, a->home, FSX_FOLLOW_ROOT_SYMLINKS, 0, &name);
	if (parent < 0)
		return REFUSE(parent, "cannot open the parent of the home directory without following symlinks");
	struct stat st;
	if (fstat(parent, &st) < 0)
		return REFUSE(negerrno(), "cannot stat the parent of the home directory");
	if (st.st_uid != 0)
		return REFUSE(-EPERM, "the parent of the home directory is not owned by root");

	_cleanup_close_ int home = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (home < 0) {
		int r = negerrno();
		return REFUSE(r, is_symlink(parent, name) ? "the home directory is a symlink" :
							    "home directory missing or not a directory");
	}
	if (fstat(home, &st) < 0)
		return REFUSE(negerrno(), "cannot stat the home directory");
	if (st.st_uid != a->uid && st.st_uid != 0)
		return REFUSE(-EPERM, "home directory is owned by another user");

	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", a->name);
	int ssh = openat(home, ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ssh < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		/* A symlink (sshd would follow it to whatever keys it finds
		 * there) or a file: moved aside, never followed or removed. */
		bool link = is_symlink(home, ".ssh");
		char moved[NAME_MAX + 1];
		int r = move_aside(home, ".ssh", now, moved, sizeof(moved));
		if (r < 0)
			return REFUSE(r, link ? "~/.ssh is a symlink and cannot be moved aside" :
						"~/.ssh is not a directory and cannot be moved aside");
		log_fields(LOG_WARNING, LOG_FIELDS(ufield), "~%s/.ssh was %s: moved aside to ~%s/%s", a->name,
			   link ? "a symlink" : "not a directory",
			   a->name, moved);
		errno = ENOENT;
	}
	if (ssh < 0 && errno == ENOENT) {
		/* ssh_home_t, not the home's type (label.h) */
		int r = label_prepare_at(home, ".ssh", S_IFDIR);
		if (r >= 0)
			r = RET_NERRNO(mkdirat(home, ".ssh", 0700));
		label_done();
		if (r < 0 && r != -EEXIST)
			return REFUSE(r, "cannot create ~/.ssh");
		ssh = openat(home, ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (ssh < 0) {
		int r = negerrno();
		return REFUSE(r, is_symlink(home, ".ssh") ? "~/.ssh is a symlink" :
				 r == -ENOTDIR ? "~/.ssh is not a directory" : "cannot open ~/.ssh");
	}
	_cleanup_close_ int sshfd = ssh;
	if (fstat(sshfd, &st) < 0)
		return REFUSE(negerrno(), "cannot stat ~/.ssh");
	if (st.st_uid != a->uid || st.st_gid != a->gid) {
		/* Through the fd: whatever the user renames, this is the directory we opened. */
		if (fchown(sshfd, a->uid, a->gid) < 0)
			return REFUSE(negerrno(), "cannot fix the owner of ~/.ssh");
		log_fields(LOG_NOTICE, LOG_FIELDS(ufield), "Fixed the owner of ~%s/.ssh (was uid %u)", a->name,
			   (unsigned)st.st_uid);
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(sshfd, 0700) < 0)
		return REFUSE(negerrno(), "cannot fix the mode of ~/.ssh");
	return TAKE_FD(sshfd);
}

/* Only our own leftovers: a temporary of authorized_keys that is a regular
 * file of the user's (after the fchown) or root's (before it); the name
 * alone proves nothing, the user can make one. */
static int remove_home_temp(int sshfd, const char *name, size_t target_len, void *userdata)
{
	const struct account *a = userdata;
	struct stat st;
	if (target_len != strlen(AUTHORIZED_KEYS) || memcmp(name + 2, AUTHORIZED_KEYS, target_len) != 0 ||
	    fstatat(sshfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != a->uid && st.st_uid != 0) || unlinkat(sshfd, name, 0) < 0)
		return 0;
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", a->name);
	log_fields(LOG_NOTICE, LOG_FIELDS(ufield),
		   "Removed ~%s/.ssh/%s, left behind by an interrupted write of authorized_keys", a->name, name);
	return 1;
}

int home_remove_temps(int sshfd, const struct account *a)
{
	return fsx_for_each_temp(sshfd, remove_home_temp, (void *)(uintptr_t)a);
}

int home_read_keys(int sshfd, const struct account *a, char **ret, size_t *ret_len, const char **ret_ignored,
		   bool *ret_keys_only, bool *ret_move_aside, char *why, size_t why_size)
{
	const char *ignored = NULL;
	bool aside = false;
	char *empty = NULL;
	_cleanup_close_ int fd = openat(sshfd, AUTHORIZED_KEYS, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0) {
		if (errno == ENOENT)
			ignored = NULL;
		else if (errno == ELOOP)
			ignored = "a symlink";
		else if (errno == ENXIO)
			ignored = "a socket or FIFO without writer", aside = true;
		else if (errno == EWOULDBLOCK)
			/* A lease (F_SETLEASE) held by whoever opened it: the open
			 * would wait for its break (Linux fs/locks.c __break_lease
			 * returns -EWOULDBLOCK for O_NONBLOCK). Renaming the name
			 * away is not blocked: vfs_rename (fs/namei.c) breaks only
			 * NFS delegations (try_break_deleg), not leases; 026 holds
			 * one and proves it. */
			ignored = "leased by another process (open: Resource temporarily unavailable)", aside = true;
		else if (errno == EISDIR)
			ignored = "a directory", aside = true;
		else
			ignored = "not readable", aside = true;
		goto empty;
	}
	if (fstat(fd, &st) < 0)
		return REFUSE(negerrno(), "cannot stat ~/.ssh/authorized_keys");
	if (S_ISDIR(st.st_mode)) {
		ignored = "a directory", aside = true;
		goto empty;
	}
	if (!S_ISREG(st.st_mode)) {
		ignored = "not a regular file", aside = true;
		goto empty;
	}
	if (st.st_nlink != 1) {
		/* The name is one of several: replacing it loses nothing. */
		ignored = "a hard link";
		goto empty;
	}
	if (st.st_uid != a->uid && st.st_uid != 0) {
		ignored = "owned by another user", aside = true;
		goto empty;
	}
	/* The user can make the file as large as they like (a sparse file
	 * costs nothing): it is not read, it is moved aside. */
	if ((size_t)st.st_size > HOME_KEYS_MAX) {
		ignored = "larger than the ceiling (" STRINGIFY_CEILING " bytes)", aside = true;
		goto empty;
	}
	int r = fsx_read_fd(fd, HOME_KEYS_MAX, ret, ret_len);
	if (r == -EFBIG) { /* grew while we read it */
		ignored = "larger than the ceiling (" STRINGIFY_CEILING " bytes)", aside = true;
		goto empty;
	}
	if (r < 0) {
		ignored = "not readable", aside = true;
		goto empty;
	}
	*ret_ignored = NULL;
	*ret_keys_only = st.st_uid != a->uid;
	*ret_move_aside = false;
	return 1;
empty:
	empty = calloc(1, 1);
	if (!empty)
		return -ENOMEM;
	*ret = empty;
	*ret_len = 0;
	*ret_ignored = ignored;
	*ret_keys_only = false;
	*ret_move_aside = aside;
	return 1;
}

int home_move_aside(int sshfd, const struct account *a, const char *name, time_t now, char *moved,
		    size_t moved_size, char *why, size_t why_size)
{
	moved[0] = '\0';
	struct stat st;
	if (fstatat(sshfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : REFUSE(negerrno(), "cannot stat a file in ~/.ssh");
	int r = move_aside(sshfd, name, now, moved, moved_size);
	if (r == -ENOENT) {
		moved[0] = '\0';
		return 0;
	}
	return r < 0 ? REFUSE(r, "cannot move a file in ~/.ssh aside") : 1;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return negerrno();
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Puts data at sshfd/authorized_keys and keeps whatever was there (never
 * opened, never followed) under a fresh unpredictable name, which goes to
 * moved ("" when nothing was there). The new file is made under that name
 * (O_CREAT|O_EXCL: a planted name is never opened), written, chowned,
 * fsynced, then swapped with the old name by renameat2(RENAME_EXCHANGE):
 * no other name has to be free and sshd never finds the name missing. A
 * crash before the swap leaves the new keys under the moved name (ours, no
 * loss); after it, the old content is already under it. */
static int replace_moving_aside(int sshfd, const struct account *a, const char *data, size_t len, time_t now,
				char *moved, size_t moved_size)
{
	_cleanup_close_ int fd = -1;
	for (unsigned attempt = 0; fd < 0; attempt++) {
		if (attempt >= MOVE_ATTEMPTS)
			return -EEXIST;
		int r = fresh_name(AUTHORIZED_KEYS, now, moved, moved_size);
		if (r < 0)
			return r;
		/* labelled as authorized_keys, the name it will take (label.h) */
		if ((r = label_prepare_at(sshfd, AUTHORIZED_KEYS, S_IFREG)) < 0)
			return r;
		fd = RET_NERRNO(openat(sshfd, moved, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600));
		label_done();
		if (fd < 0 && fd != -EEXIST)
			return fd;
	}
	int r = write_all(fd, data, len);
	if (r >= 0)
		r = RET_NERRNO(fchown(fd, a->uid, a->gid));
	if (r >= 0)
		r = RET_NERRNO(fchmod(fd, 0600));
	if (r >= 0)
		r = RET_NERRNO(fsync(fd));
	if (r >= 0) {
		r = RET_NERRNO(renameat2(sshfd, moved, sshfd, AUTHORIZED_KEYS, RENAME_EXCHANGE));
		if (r == -ENOENT) {
			/* Nothing there (any more): ours simply takes the name. */
			r = RET_NERRNO(renameat2(sshfd, moved, sshfd, AUTHORIZED_KEYS, RENAME_NOREPLACE));
			if (r >= 0)
				moved[0] = '\0';
		} else if (r == -EINVAL || r == -ENOTSUP) {
			/* A file system without RENAME_EXCHANGE: what is there
			 * goes to a second fresh name, then ours takes its place. */
			char other[NAME_MAX + 1];
			r = move_aside(sshfd, AUTHORIZED_KEYS, now, other, sizeof(other));
			if (r >= 0 || r == -ENOENT) {
				bool none = r == -ENOENT;
				r = RET_NERRNO(renameat2(sshfd, moved, sshfd, AUTHORIZED_KEYS, RENAME_NOREPLACE));
				if (r >= 0)
					snprintf(moved, moved_size, "%s", none ? "" : other);
			}
		}
	}
	if (r < 0) {
		(void)unlinkat(sshfd, moved, 0);
		moved[0] = '\0';
		return r;
	}
	/* The user may swap the name again at once (it is their directory);
	 * what counts for the report is that our file took it. */
	struct stat ours, there;
	if (fstat(fd, &ours) < 0 || fstatat(sshfd, AUTHORIZED_KEYS, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
	    ours.st_dev != there.st_dev || ours.st_ino != there.st_ino)
		return -EAGAIN;
	r = fsx_fsync_dir(sshfd);
	return r < 0 ? r : 1;
}

int home_write_keys(int sshfd, const struct account *a, const char *data, size_t len, bool move, time_t now,
		    char *moved, size_t moved_size, char *why, size_t why_size)
{
	if (moved_size)
		moved[0] = '\0';
	struct stat st;
	if (!move && fstatat(sshfd, AUTHORIZED_KEYS, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		move = true; /* became a directory since it was read */
	if (move) {
		int r = replace_moving_aside(sshfd, a, data, len, now, moved, moved_size);
		if (r < 0)
			return REFUSE(r, r == -EAGAIN ? "~/.ssh/authorized_keys was replaced again while it was written"
						      : "cannot replace ~/.ssh/authorized_keys, keeping its old content aside");
		return 1;
	}
	int r = fsx_write_atomic_at(sshfd, AUTHORIZED_KEYS, data, len, 0600, a->uid, a->gid, FSX_SKIP_IF_SAME);
	if (r < 0)
		return REFUSE(r, "cannot replace ~/.ssh/authorized_keys");
	return r;
}
