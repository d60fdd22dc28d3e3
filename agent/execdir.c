/* The executor's state directory; see execdir.h. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cleanup.h"
#include "execdir.h"
#include "fsx.h"
#include "log.h"

int execdir_open(struct execdir *x, int root_fd, int inotify_fd, const char *dir)
{
	if (x->fd >= 0)
		return 0;
	int fd = fsx_open_dir_at(root_fd, dir, 0, 0);
	if (fd < 0)
		return fd;
	/* inotify needs a path; the fd's /proc link names the directory we
	 * verified, whatever happens to the path later. */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(inotify_fd, proc, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR);
	if (wd < 0) {
		int r = negerrno();
		close(fd);
		return r;
	}
	x->fd = fd;
	x->wd = wd;
	return 0;
}

void execdir_close(struct execdir *x, int inotify_fd)
{
	if (x->wd >= 0)
		inotify_rm_watch(inotify_fd, x->wd);
	x->wd = -1;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

bool execdir_inotify(struct execdir *x, int inotify_fd, const char *dir)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool result = false, gone = false;
	for (;;) {
		ssize_t n = read(inotify_fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->len > 0 && strcmp(ev->name, EXECDIR_RESULT_FILE) == 0)
				result = true;
			if (ev->len > 0 && strcmp(ev->name, CTRDHEALTH_FILE) == 0)
				x->probe_written = true;
			/* The directory was removed: its watch is gone, and the
			 * loop reopens the directory once it is back. */
			if ((ev->mask & IN_IGNORED) && ev->wd == x->wd)
				gone = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (gone) {
		log_warning("%s was removed; waiting for it to come back", dir);
		x->wd = -1; /* the kernel removed it */
		execdir_close(x, inotify_fd);
		return false;
	}
	return result;
}

int execdir_read(struct execdir *x, const char *dir)
{
	if (x->fd < 0)
		return 0;
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(x->fd, EXECDIR_RESULT_FILE, RESULT_MAX, &data, &len);
	if (r < 0) {
		if (r != -ENOENT)
			log_warning_errno(r, "cannot read %s/%s", dir, EXECDIR_RESULT_FILE);
		return 0;
	}
	struct result res;
	const char *err = NULL;
	r = result_parse(data, len, &res, &err);
	if (r < 0) {
		log_warning_errno(r, "ignoring %s/%s: %s", dir, EXECDIR_RESULT_FILE, err ? err : "invalid");
		return 0;
	}
	if (x->valid)
		result_done(&x->result);
	x->result = res;
	x->valid = true;

	/* The in-place update's state too: it changes within one generation
	 * (waiting -> running after the handshake, running -> failed after a
	 * reboot into the old OS), and each change is news to report. */
	char seen[sizeof(x->reported)];
	snprintf(seen, sizeof(seen), "%.64s/%llu/%d/%d", res.checksum, (unsigned long long)res.generation, res.success,
		 res.inplace.present ? res.inplace.state : -1);
	if (strcmp(seen, x->reported) == 0)
		return 1;
	snprintf(x->reported, sizeof(x->reported), "%s", seen);
	return 2;
}

int execdir_read_probe(struct execdir *x, const char *dir, struct ctrdhealth *ret)
{
	x->probe_written = false;
	if (x->fd < 0)
		return -ENOENT;
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(x->fd, CTRDHEALTH_FILE, CTRDHEALTH_MAX, &data, &len);
	if (r < 0) {
		if (r != -ENOENT)
			log_warning_errno(r, "cannot read %s/%s", dir, CTRDHEALTH_FILE);
		return r;
	}
	const char *err = NULL;
	r = ctrdhealth_parse(data, len, ret, &err);
	if (r < 0)
		log_warning_errno(r, "ignoring %s/%s: %s", dir, CTRDHEALTH_FILE, err ? err : "invalid");
	return r;
}

void execdir_done(struct execdir *x, int inotify_fd)
{
	execdir_close(x, inotify_fd);
	if (x->valid)
		result_done(&x->result);
	x->valid = false;
}

bool execdir_applied_once(const struct execdir *x)
{
	struct stat st;
	return x->fd >= 0 && fstatat(x->fd, "last-applied.yaml", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}
