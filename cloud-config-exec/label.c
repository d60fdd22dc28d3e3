/* SELinux labels for what the executor creates; see label.h. */
#include <errno.h>
#include <limits.h>
#include <selinux/context.h>
#include <selinux/label.h>
#include <selinux/selinux.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "label.h"
#include "log.h"

/* The program's one labelling state: the file contexts, the root the
 * paths are below ("" for "/"), and the program's own SELinux user. */
static struct selabel_handle *label_handle;
static char label_root[PATH_MAX];
static char label_user[64];

static const struct fsx_label label_fsx = { .prepare = label_prepare_at, .done = label_done };

int label_init(const char *root)
{
	if (label_handle)
		return 1;
	if (is_selinux_enabled() <= 0)
		return 0;
	char real[PATH_MAX];
	if (!realpath(root && *root ? root : "/", real))
		return log_error_errno(negerrno(), "Cannot resolve the root %s", root);
	if (strcmp(real, "/") == 0)
		real[0] = '\0';
	char *own = NULL;
	if (getcon_raw(&own) < 0)
		return log_error_errno(negerrno(), "Cannot read the own SELinux context");
	context_t c = context_new(own);
	const char *user = c ? context_user_get(c) : NULL;
	int n = user ? snprintf(label_user, sizeof(label_user), "%s", user) : -1;
	if (c)
		context_free(c);
	freecon(own);
	if (n < 0 || (size_t)n >= sizeof(label_user))
		return log_error_errno(-EINVAL, "Cannot tell the SELinux user of the own context");
	label_handle = selabel_open(SELABEL_CTX_FILE, NULL, 0);
	if (!label_handle)
		return log_error_errno(negerrno(), "SELinux is enabled, but its file contexts cannot be loaded");
	memcpy(label_root, real, strlen(real) + 1);
	fsx_set_label(&label_fsx);
	return 1;
}

/* The path of dirfd/name as the file contexts name it (below the root). */
static int label_path(int dirfd, const char *name, char *buf, size_t size)
{
	char proc[64], dir[PATH_MAX];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
	ssize_t k = readlink(proc, dir, sizeof(dir) - 1);
	if (k < 0)
		return negerrno();
	dir[k] = '\0';
	size_t rl = strlen(label_root);
	if (dir[0] != '/' || strncmp(dir, label_root, rl) != 0 || (dir[rl] != '/' && dir[rl] != '\0'))
		return -EXDEV; /* not below the root, or "(deleted)" and the like */
	const char *below = dir[rl] ? dir + rl : "/";
	int n = snprintf(buf, size, "%s%s%s", below, strcmp(below, "/") == 0 ? "" : "/", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The file contexts' label for path, with the program's own SELinux user
 * (the home directories' contexts name the login user's, unconfined_u:
 * only the type decides access, and restorecon without -F keeps the user
 * too; another user would need the right to change object identities).
 * 1 and *ret (freecon()), 0 no file context, -errno (logged). */
static int lookup(const char *path, mode_t type, char **ret)
{
	char *con = NULL;
	if (selabel_lookup_raw(label_handle, &con, path, type) < 0)
		return errno == ENOENT ? 0 : log_error_errno(negerrno(), "Cannot look up the SELinux label of %s", path);
	context_t c = context_new(con);
	const char *s = c && context_user_set(c, label_user) == 0 ? context_str(c) : NULL;
	char *out = s ? strdup(s) : NULL;
	if (c)
		context_free(c);
	freecon(con);
	if (!out)
		return log_error_errno(-ENOMEM, "Cannot make the SELinux label of %s", path);
	*ret = out;
	return 1;
}

int label_prepare_at(int dirfd, const char *name, mode_t type)
{
	if (!label_handle)
		return 0;
	char path[PATH_MAX];
	int r = label_path(dirfd, name, path, sizeof(path));
	if (r < 0)
		return log_error_errno(r, "Cannot tell the path of %s for its SELinux label", name);
	_cleanup_free_ char *con = NULL;
	r = lookup(path, type, &con);
	if (r <= 0)
		return r; /* no file context: what the kernel gives */
	r = RET_NERRNO(setfscreatecon_raw(con));
	if (r < 0) {
		if (security_getenforce() == 1)
			r = log_error_errno(r, "Cannot create %s with the SELinux label %s", path, con);
		else {
			log_debug_errno(r, "Cannot create %s with the SELinux label %s (permissive)", path, con);
			r = 0;
		}
	}
	return r;
}

int label_fd_as(int fd, const char *path, mode_t type)
{
	if (!label_handle)
		return 0;
	_cleanup_free_ char *con = NULL;
	int r = lookup(path, type, &con);
	if (r <= 0)
		return r;
	r = RET_NERRNO(fsetfilecon_raw(fd, con));
	return r < 0 ? log_error_errno(r, "Cannot label %s %s", path, con) : 0;
}

void label_done(void)
{
	if (label_handle)
		(void)setfscreatecon_raw(NULL);
}

void label_fini(void)
{
	if (!label_handle)
		return;
	fsx_set_label(NULL);
	selabel_close(label_handle);
	label_handle = NULL;
}
