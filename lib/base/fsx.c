/* Safe file operations; see fsx.h. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"

static const struct fsx_label *fsx_label;

void fsx_set_label(const struct fsx_label *label)
{
	fsx_label = label;
}

/* mkdirat() and openat(O_CREAT) with the label prepared (fsx.h). */
static int label_prepare(int dirfd, const char *name, mode_t type)
{
	return fsx_label ? fsx_label->prepare(dirfd, name, type) : 0;
}

static void label_done(void)
{
	if (fsx_label)
		fsx_label->done();
}

static int mkdirat_labelled(int dirfd, const char *name, mode_t mode)
{
	int r = label_prepare(dirfd, name, S_IFDIR);
	if (r < 0)
		return r;
	r = RET_NERRNO(mkdirat(dirfd, name, mode));
	label_done();
	return r;
}

int fsx_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;

	size_t cap = (size_t)st.st_size + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len + 1 >= cap) {
			/* Full: either at EOF, or the file grew while we read it. */
			char probe;
			ssize_t k = pread(fd, &probe, 1, (off_t)len);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return negerrno();
			if (k == 0)
				break;
			if (len + 1 > max)
				return -EFBIG;
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *n = realloc(buf, ncap);
			if (!n)
				return -ENOMEM;
			buf = n;
			cap = ncap;
		}
		ssize_t k = pread(fd, buf + len, cap - 1 - len, (off_t)len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int fsx_read_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int parent = -1;
	const char *base = name;

	if (strchr(name, '/')) {
		parent = fsx_open_parent_at(dirfd, name, 0, 0, &base);
		if (parent < 0)
			return parent;
		dirfd = parent;
	}
	_cleanup_close_ int fd = openat(dirfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return negerrno();
	return fsx_read_fd(fd, max, ret, ret_len);
}

static bool same_file(int dirfd, const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
		      gid_t gid)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != len || st.st_nlink != 1)
		return false;
	if ((st.st_mode & 07777) != (mode & 07777))
		return false;
	if ((uid != FSX_UID_KEEP && st.st_uid != uid) || (gid != FSX_GID_KEEP && st.st_gid != gid))
		return false;
	_cleanup_free_ char *cur = NULL;
	size_t cur_len;
	if (fsx_read_fd(fd, len, &cur, &cur_len) < 0 || cur_len != len)
		return false;
	return memcmp(cur, data, len) == 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t k = write(fd, p, len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

int fsx_open_temp_at(int dirfd, const char *name, int access, char tmp[static NAME_MAX + 1])
{
	for (int attempt = 0;; attempt++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return negerrno();
		/* ".#<name>.<16 hex>" stays within NAME_MAX for names up to 236 bytes. */
		int n = snprintf(tmp, NAME_MAX + 1, ".#%.*s.%016llx", 200, name, (unsigned long long)rnd);
		if (n < 0 || n > NAME_MAX)
			return -ENAMETOOLONG;
		int fd = label_prepare(dirfd, name, S_IFREG);
		if (fd < 0)
			return fd;
		fd = RET_NERRNO(openat(dirfd, tmp, access | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
		label_done();
		if (fd >= 0)
			return fd;
		if (fd != -EEXIST || attempt > 16)
			return fd;
	}
}

int fsx_write_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, unsigned flags)
{
	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if ((flags & FSX_SKIP_IF_SAME) && same_file(dirfd, name, data, len, mode, uid, gid))
		return 0;

	char tmp[NAME_MAX + 1];
	_cleanup_close_ int fd = fsx_open_temp_at(dirfd, name, O_WRONLY, tmp);
	if (fd < 0)
		return fd;

	int r = write_all(fd, data, len);
	if (r >= 0 && (uid != FSX_UID_KEEP || gid != FSX_GID_KEEP))
		r = RET_NERRNO(fchown(fd, uid, gid));
	if (r >= 0)
		r = RET_NERRNO(fchmod(fd, mode & 07777));
	if (r >= 0)
		r = RET_NERRNO(fsync(fd));
	if (r >= 0)
		r = RET_NERRNO(renameat(dirfd, tmp, dirfd, name));
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	r = fsx_fsync_dir(dirfd);
	return r < 0 ? r : 1;
}

size_t fsx_temp_target(const char *name)
{
	size_t n = strlen(name);
	if (n < 2 + 1 + 1 + 16 || name[0] != '.' || name[1] != '#' || name[n - 17] != '.')
		return 0;
	if (strspn(name + n - 16, "0123456789abcdef") != 16)
		return 0;
	return n - 2 - 17;
}

int fsx_for_each_temp(int dirfd, int (*fn)(int dirfd, const char *name, size_t target_len, void *userdata),
		      void *userdata)
{
	/* A new open file description: its own offset, dirfd's is not moved. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	DIR *d = fdopendir(fd);
	if (!d) {
		int r = negerrno();
		close(fd);
		return r;
	}
	int sum = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t tl = fsx_temp_target(de->d_name);
		int r = tl ? fn(dirfd, de->d_name, tl, userdata) : 0;
		if (r > 0)
			sum += r;
	}
	closedir(d);
	return sum;
}

int fsx_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free fd: this one, as the lower ones are open. */
		int n = open("/dev/null", O_RDWR);
		if (n < 0)
			return -errno;
		if (n != fd) {
			close(n);
			return -EBADF;
		}
	}
	return 0;
}

int fsx_fsync_dir(int dirfd)
{
	return RET_NERRNO(fsync(dirfd));
}

int fsx_open_root(const char *root)
{
	if (!root || !*root)
		root = "/";
	return RET_NERRNO(open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

/* Identity of a directory on the way down from the root of a walk. */
struct dir_id {
	dev_t dev;
	ino_t ino;
};

/* Records the identity of fd as (*chain)[i], growing the array. */
static int chain_set(struct dir_id **chain, size_t *cap, size_t i, int fd)
{
	if (i >= *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct dir_id *n = reallocarray(*chain, ncap, sizeof(**chain));
		if (!n)
			return -ENOMEM;
		*chain = n;
		*cap = ncap;
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return negerrno();
	(*chain)[i] = (struct dir_id){ st.st_dev, st.st_ino };
	return 0;
}

/* True when the symlink lst, found in the directory dirfd, can only have
 * been made by root: the link is root's, and so is the directory, which no
 * group or other may write to (with a POSIX ACL the group bits are the ACL
 * mask, so a named user granted write shows up here too). */
static bool symlink_trusted(int dirfd, const struct stat *lst)
{
	struct stat dst;
	if (fstat(dirfd, &dst) < 0)
		return false;
	return S_ISLNK(lst->st_mode) && lst->st_uid == 0 && dst.st_uid == 0 &&
	       (dst.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static bool has_dotdot(const char *path)
{
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += n;
	}
	return false;
}

int fsx_open_dir_at(int dirfd, const char *path, unsigned flags, mode_t mode)
{
	const bool follow = flags & FSX_FOLLOW_ROOT_SYMLINKS;
	/* With follow: chain[0] is dirfd, chain[depth] the directory cur, so a
	 * ".." in a link's target can be checked to land where we came from. */
	_cleanup_free_ struct dir_id *chain = NULL;
	_cleanup_free_ char *spliced = NULL; /* link target + rest of the walk */
	size_t depth = 0, chain_cap = 0;
	unsigned hops = 0;
	int r;

	/* The caller's own ".." is refused outright; only the target of a
	 * trusted link may climb, and never above dirfd. */
	if (has_dotdot(path))
		return -EPERM;

	/* The directories on the way are opened O_PATH: a walk needs to
	 * search them, not to read them (an O_PATH open checks no permission
	 * of the directory itself: under SELinux the walk needs search on the
	 * way and read only on the directory it returns). */
	_cleanup_close_ int cur = RET_NERRNO(openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (cur < 0)
		return cur;
	if (follow && (r = chain_set(&chain, &chain_cap, 0, cur)) < 0)
		return r;

	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		char comp[NAME_MAX + 1];
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			/* Only reachable from a followed link's target. The
			 * parent must be the directory we walked through: a
			 * directory renamed meanwhile could otherwise let the
			 * climb pass above dirfd. */
			if (!follow || depth == 0)
				return -EPERM;
			_cleanup_close_ int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			struct stat st;
			if (up < 0 || fstat(up, &st) < 0)
				return negerrno();
			if (st.st_dev != chain[depth - 1].dev || st.st_ino != chain[depth - 1].ino)
				return -EAGAIN;
			close(cur);
			cur = TAKE_FD(up);
			depth--;
			continue;
		}

		int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (next < 0 && errno == ENOENT && (flags & FSX_MKDIR)) {
			if ((r = mkdirat_labelled(cur, comp, mode)) < 0 && r != -EEXIST)
				return r;
			next = openat(cur, comp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		}
		if (next < 0) {
			r = negerrno();
			/* O_NOFOLLOW|O_DIRECTORY reports a symlink as ENOTDIR.
			 * The link is examined through an O_PATH fd, so what is
			 * checked is what is read. */
			if (r != -ENOTDIR && r != -ELOOP)
				return r;
			_cleanup_close_ int lfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			struct stat lst;
			if (lfd < 0 || fstat(lfd, &lst) < 0 || !S_ISLNK(lst.st_mode))
				return r;
			if (!follow || !symlink_trusted(cur, &lst) || ++hops > FSX_SYMLINK_HOPS_MAX)
				return -ELOOP;
			char target[PATH_MAX];
			ssize_t k = readlinkat(lfd, "", target, sizeof(target));
			if (k < 0)
				return negerrno();
			if ((size_t)k >= sizeof(target))
				return -ENAMETOOLONG;
			if (k == 0)
				return -ENOENT;
			size_t rest = strlen(p);
			if ((size_t)k + 1 + rest >= PATH_MAX)
				return -ENAMETOOLONG;
			char *s = malloc((size_t)k + 1 + rest + 1);
			if (!s)
				return -ENOMEM;
			memcpy(s, target, (size_t)k);
			s[k] = '/';
			memcpy(s + k + 1, p, rest + 1);
			free(spliced);
			p = spliced = s;
			if (target[0] == '/') {
				/* Absolute: from the root of the walk, as
				 * RESOLVE_IN_ROOT would. */
				int root = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (root < 0)
					return negerrno();
				close(cur);
				cur = root;
				depth = 0;
			}
			/* Relative: from the link's directory, cur. */
			continue;
		}
		if (follow && (r = chain_set(&chain, &chain_cap, depth + 1, next)) < 0) {
			close(next);
			return r;
		}
		depth++;
		close(cur);
		cur = next;
	}
	/* The one the caller gets is opened for real (same directory: "."
	 * of the O_PATH fd looks nothing up). */
	return RET_NERRNO(openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

int fsx_open_parent_at(int dirfd, const char *path, unsigned flags, mode_t mode, const char **ret_name)
{
	size_t len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		return -EINVAL; /* "dir/" names no file */
	const char *slash = memrchr(path, '/', len);
	const char *name = slash ? slash + 1 : path;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;

	_cleanup_free_ char *dir = strndup(path, (size_t)(name - path));
	if (!dir)
		return -ENOMEM;
	int fd = fsx_open_dir_at(dirfd, dir, flags, mode);
	if (fd < 0)
		return fd;
	*ret_name = name;
	return fd;
}

bool fsx_path_is_safe(const char *path, size_t max)
{
	size_t len = strnlen(path, max + 1);
	if (len == 0 || len > max || path[0] != '/')
		return false;
	if (len > 1 && path[len - 1] == '/')
		return false;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	for (const char *p = path; *p;) {
		p++; /* skip '/' */
		size_t n = strcspn(p, "/");
		if (n == 0 && len > 1)
			return false; /* "//" */
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (n > NAME_MAX)
			return false;
		p += n;
	}
	return true;
}
