/* The files step; see files.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "files.h"
#include "fsx.h"
#include "log.h"

/* How an OSC path is walked: a symlink among its directories is followed
 * only when root alone can have made it (merged /usr's lib -> usr/lib, an
 * image's opt -> var/opt), and resolved inside the root; the file itself is
 * never followed. */
#define WALK FSX_FOLLOW_ROOT_SYMLINKS

static const struct osc_file *find_file(const struct osc *osc, const char *path)
{
	if (!osc)
		return NULL;
	size_t lo = 0, hi = osc->n_files;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(osc->files[mid].path, path);
		if (c == 0)
			return &osc->files[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* gardener-node-agent's own binary (its component writes it to
 * /opt/bin/gardener-node-agent: gardener/gardener pkg/component/extensions/
 * operatingsystemconfig/original/components/nodeagent/) is superseded with
 * its unit (units.c): never pulled or written (images.c) nor owned here. */
bool files_image_superseded(const char *path)
{
	return strcmp(path, "/opt/bin/gardener-node-agent") == 0;
}

int files_strv_add(char ***v, const char *s)
{
	size_t n = 0, at;
	if (*v)
		while ((*v)[n])
			n++;
	for (at = 0; at < n; at++) {
		int c = strcmp((*v)[at], s);
		if (c == 0)
			return 0;
		if (c > 0)
			break;
	}
	char **nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	char *dup = strdup(s);
	if (!dup) {
		nv[n] = NULL;
		return -ENOMEM;
	}
	memmove(nv + at + 1, nv + at, (n - at) * sizeof(char *));
	nv[at] = dup;
	nv[n + 1] = NULL;
	return 1;
}

/* Equal entries in two models. An image file has no bytes here, so it is
 * "the same" exactly when its reference is: image, filePathInImage and
 * permissions (what Gardener's agent would copy out of the image). */
static bool file_same(const struct osc_file *a, const struct osc_file *b)
{
	if (a->source != b->source || a->mode != b->mode)
		return false;
	if (a->source == OSC_SOURCE_IMAGE)
		return strcmp(a->image, b->image) == 0 && strcmp(a->path_in_image, b->path_in_image) == 0;
	/* A file from a Secret: the reference here; a change of the Secret's
	 * bytes shows as the write of the file (files_apply()'s list). */
	if (a->source == OSC_SOURCE_SECRET)
		return strcmp(a->secret_name, b->secret_name) == 0 && strcmp(a->secret_key, b->secret_key) == 0;
	return a->content_len == b->content_len &&
	       (a->content_len == 0 || memcmp(a->content, b->content, a->content_len) == 0);
}

void files_plan_done(struct files_plan *p)
{
	strv_free(p->changed);
	strv_free(p->remove);
	strv_free(p->write);
	*p = (struct files_plan){ 0 };
}

int files_plan_compute(const struct osc *old, const struct osc *new, char *const *owned,
		       struct files_plan *ret)
{
	_cleanup_strv_free_ char **changed = calloc(1, sizeof(char *));
	_cleanup_strv_free_ char **remove = calloc(1, sizeof(char *));
	int r;

	if (!changed || !remove)
		return -ENOMEM;
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *o = find_file(old, new->files[i].path);
		if (!o || !file_same(o, &new->files[i]))
			if ((r = files_strv_add(&changed, new->files[i].path)) < 0)
				return r;
	}
	for (size_t i = 0; old && i < old->n_files; i++)
		if (!find_file(new, old->files[i].path))
			if ((r = files_strv_add(&changed, old->files[i].path)) < 0)
				return r;
	for (char *const *p = owned; p && *p; p++)
		if (!find_file(new, *p))
			if ((r = files_strv_add(&remove, *p)) < 0)
				return r;
	ret->changed = TAKE_PTR(changed);
	ret->remove = TAKE_PTR(remove);
	return 0;
}

/* Opens the directory of path below rootfd and lstats the entry: 1 with
 * *ret_dfd, *ret_name and *ret_st set when it exists (as anything, links not
 * followed), 0 when it or a directory on the way does not, -errno when that
 * cannot be told. */
static int lstat_below(int rootfd, const char *path, int *ret_dfd, const char **ret_name, struct stat *ret_st)
{
	const char *name;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, WALK, 0, &name);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negerrno();
	*ret_dfd = TAKE_FD(dfd);
	*ret_name = name;
	*ret_st = st;
	return 1;
}

/* 1 when path exists below rootfd (as anything, links not followed), 0 when
 * not, -errno when that cannot be told. */
static int path_exists(int rootfd, const char *path)
{
	_cleanup_close_ int dfd = -EBADF;
	const char *name;
	struct stat st;
	return lstat_below(rootfd, path, &dfd, &name, &st);
}

static int remove_file(int rootfd, const char *path)
{
	_cleanup_close_ int dfd = -EBADF;
	const char *name;
	struct stat st;
	int r = lstat_below(rootfd, path, &dfd, &name, &st);
	if (r <= 0)
		return r;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (unlinkat(dfd, name, 0) < 0)
		return errno == ENOENT ? 0 : negerrno();
	r = fsx_fsync_dir(dfd);
	return r < 0 ? r : 1;
}

static void remove_stale_file_temps(int rootfd, const struct osc *new, const struct files_plan *plan);
static void remove_temps_of(int rootfd, const char *path);

int files_apply(int rootfd, const struct osc *new, const struct files_plan *plan, struct state *st,
		int statefd, char ***ret_written)
{
	_cleanup_strv_free_ char **written = calloc(1, sizeof(char *));
	bool own_changed = false;
	int r, ret = 0;

	if (!written)
		return log_error_errno(-ENOMEM, "Out of memory");

	/* Ownership first: a file we are about to create is recorded as ours
	 * (and persisted) before it exists, so no crash can leak it. Image
	 * files too: the images step writes them after this, so one that does
	 * not exist yet is ours and goes when the OSC drops it; one the OS
	 * image provided (present before us) is not ours and stays. */
	for (size_t i = 0; i < new->n_files; i++) {
		const char *path = new->files[i].path;
		if (new->files[i].source == OSC_SOURCE_IMAGE && files_image_superseded(path))
			continue; /* never written (images.c) */
		if (state_owns(st, path))
			continue;
		r = path_exists(rootfd, path);
		if (r < 0)
			continue; /* reported by the write below */
		if (r == 0) {
			if ((r = state_own(st, path)) < 0)
				return log_error_errno(r, "Out of memory");
			own_changed = true;
		}
	}
	if (own_changed && (r = state_save(statefd, st)) < 0)
		return log_error_errno(r, "Failed to record file ownership in %s", STATE_FILE);

	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i];
		_cleanup_free_ char *ffield = NULL;
		if (asprintf(&ffield, "FILE=%s", f->path) < 0)
			return log_error_errno(-ENOMEM, "Out of memory");
		if (f->source == OSC_SOURCE_IMAGE) {
			/* Written by the images step (images.h), not here. */
			_cleanup_free_ char *ifield = NULL;
			if (asprintf(&ifield, "IMAGE=%s", f->image) < 0)
				return log_error_errno(-ENOMEM, "Out of memory");
			log_fields(LOG_NOTICE, LOG_FIELDS(ffield, ifield),
				   "File '%s' comes from image '%s' (path '%s'): copied out of the image through "
				   "containerd by the images step",
				   f->path, f->image, f->path_in_image);
			continue;
		}
		if (f->source == OSC_SOURCE_SECRET && !f->secret_resolved) {
			/* Its Secret was not read: the last content stays; the
			 * run reports it (secretfiles.h). */
			log_fields(LOG_ERR, LOG_FIELDS(ffield),
				   "File %s not written: node-agent did not hand over key '%s' of Secret kube-system/%s",
				   f->path, f->secret_key, f->secret_name);
			continue;
		}
		const char *name;
		_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, f->path, WALK | FSX_MKDIR, 0755, &name);
		if (dfd < 0) {
			r = log_fields_errno(LOG_ERR, dfd, LOG_FIELDS(ffield),
					     "Cannot open the directory of %s (a symlink not made by root, or a non-directory in the path?)",
					     f->path);
			if (ret == 0)
				ret = r;
			continue;
		}
		r = fsx_write_atomic_at(dfd, name, f->content, f->content_len, f->mode, 0, 0, FSX_SKIP_IF_SAME);
		if (r < 0) {
			r = log_fields_errno(LOG_ERR, r, LOG_FIELDS(ffield), "Failed to write %s", f->path);
			if (ret == 0)
				ret = r;
			continue;
		}
		if (r == 0) {
			log_fields(LOG_DEBUG, LOG_FIELDS(ffield), "File %s unchanged", f->path);
			continue;
		}
		log_fields(LOG_INFO, LOG_FIELDS(ffield), "File %s written (%zu bytes, mode %04o)", f->path,
			   f->content_len, (unsigned)f->mode);
		if ((r = files_strv_add(&written, f->path)) < 0)
			return log_error_errno(r, "Out of memory");
	}
	if (ret < 0)
		return ret;
	if ((r = files_remove_dropped(rootfd, plan, st, statefd)) < 0)
		return r;
	remove_stale_file_temps(rootfd, new, plan);
	*ret_written = TAKE_PTR(written);
	return 0;
}

int files_remove_dropped(int rootfd, const struct files_plan *plan, struct state *st, int statefd)
{
	int r, ret = 0;
	for (char **p = plan->remove; p && *p; p++) {
		_cleanup_free_ char *ffield = NULL;
		if (asprintf(&ffield, "FILE=%s", *p) < 0)
			return log_error_errno(-ENOMEM, "Out of memory");
		r = remove_file(rootfd, *p);
		if (r < 0) {
			r = log_fields_errno(LOG_ERR, r, LOG_FIELDS(ffield), "Failed to remove dropped file %s", *p);
			if (ret == 0)
				ret = r;
			continue;
		}
		log_fields(LOG_INFO, LOG_FIELDS(ffield), r > 0 ? "File %s removed (dropped from the OSC)"
							      : "File %s already gone (dropped from the OSC)", *p);
		/* Its temporaries too (a write of it killed before the rename),
		 * before it is disowned: afterwards no plan claims them. */
		remove_temps_of(rootfd, *p);
		state_disown(st, *p);
		if ((r = state_save(statefd, st)) < 0)
			return log_error_errno(r, "Failed to save %s", STATE_FILE);
	}
	return ret;
}

struct temps_ctx {
	const char *dir;
	bool (*ours)(const char *path, void *userdata);
	void *userdata;
};

static int remove_file_temp(int dfd, const char *name, size_t target_len, void *userdata)
{
	const struct temps_ctx *c = userdata;
	const char *dir = strcmp(c->dir, "/") == 0 ? "" : c->dir;
	char path[OSC_PATH_MAX + 256];
	int k = snprintf(path, sizeof(path), "%s/%.*s", dir, (int)target_len, name + 2);
	if (k < 0 || (size_t)k >= sizeof(path) || !c->ours(path, c->userdata) || unlinkat(dfd, name, 0) < 0)
		return 0;
	char ffield[OSC_PATH_MAX + 300];
	snprintf(ffield, sizeof(ffield), "FILE=%s/%s", dir, name);
	log_fields(LOG_NOTICE, LOG_FIELDS(ffield), "Removed %s/%s, left behind by an interrupted write of %s", c->dir,
		   name, path);
	return 1;
}

int files_remove_stale_temps(int dfd, const char *dir, bool (*ours)(const char *path, void *userdata),
			     void *userdata)
{
	struct temps_ctx c = { .dir = dir, .ours = ours, .userdata = userdata };
	return fsx_for_each_temp(dfd, remove_file_temp, &c);
}

static bool strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

/* A temporary is ours when its target is a file of the new OSC or one the
 * old OSC had (plan->changed lists dropped files too). Those of files we
 * owned and the OSC dropped go with them (files_remove_dropped()). */
static bool temp_target_ours(const char *path, void *userdata)
{
	const void *const *ctx = userdata;
	const struct osc *new = ctx[0];
	const struct files_plan *plan = ctx[1];
	return find_file(new, path) || strv_has(plan->changed, path);
}

/* The directory of an absolute path ("/" for "/x"), or NULL without memory. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

static int add_dir_of(char ***dirs, const char *path)
{
	_cleanup_free_ char *dir = dir_of(path);
	return dir ? files_strv_add(dirs, dir) : -ENOMEM;
}

static bool temp_target_is(const char *path, void *userdata)
{
	return strcmp(path, userdata) == 0;
}

/* The temporaries of path in its directory, which a write of path killed
 * between creating and renaming them left behind. */
static void remove_temps_of(int rootfd, const char *path)
{
	_cleanup_free_ char *dir = dir_of(path);
	const char *name;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, WALK, 0, &name);
	if (dir && dfd >= 0)
		(void)files_remove_stale_temps(dfd, dir, temp_target_is, (void *)(uintptr_t)path);
}

/* Temporaries of OSC files left behind by a kill between creating and
 * renaming them (fsx names them ".#<name>.<16 hex>"). */
static void remove_stale_file_temps(int rootfd, const struct osc *new, const struct files_plan *plan)
{
	_cleanup_strv_free_ char **dirs = NULL;
	for (size_t i = 0; i < new->n_files; i++)
		if (add_dir_of(&dirs, new->files[i].path) < 0)
			return;
	for (char **p = plan->changed; p && *p; p++)
		if (add_dir_of(&dirs, *p) < 0)
			return;
	const void *ctx[2] = { new, plan };
	for (char **d = dirs; d && *d; d++) {
		_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, *d, WALK, 0);
		if (dfd >= 0)
			(void)files_remove_stale_temps(dfd, *d, temp_target_ours, (void *)(uintptr_t)ctx);
	}
}

/* 1 when the file on disk differs from f (or is missing), 0 when equal. */
static int file_differs(int rootfd, const struct osc_file *f)
{
	const char *name;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, f->path, WALK, 0, &name);
	if (dfd == -ENOENT)
		return 1;
	if (dfd < 0)
		return dfd;
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? 1 : negerrno();
	struct stat st;
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != f->mode || st.st_uid != 0 || st.st_gid != 0 ||
	    (size_t)st.st_size != f->content_len || st.st_nlink != 1)
		return 1;
	_cleanup_free_ char *cur = NULL;
	size_t len;
	int r = fsx_read_fd(fd, f->content_len, &cur, &len);
	if (r < 0)
		return 1;
	return len != f->content_len || (len && memcmp(cur, f->content, len) != 0);
}

int files_plan_disk(int rootfd, const struct osc *new, struct files_plan *p)
{
	_cleanup_strv_free_ char **write = calloc(1, sizeof(char *));
	if (!write)
		return -ENOMEM;
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i];
		if (f->source == OSC_SOURCE_IMAGE || (f->source == OSC_SOURCE_SECRET && !f->secret_resolved))
			continue;
		/* One that cannot be inspected is written (and fails there). */
		if (file_differs(rootfd, f) != 0 && files_strv_add(&write, f->path) < 0)
			return -ENOMEM;
	}
	strv_free(p->write);
	p->write = TAKE_PTR(write);
	return 0;
}

int files_plan_print(FILE *out, const struct osc *new, const struct files_plan *p)
{
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i];
		if (f->source == OSC_SOURCE_SECRET && !f->secret_resolved)
			fprintf(out, "secret  %s: from Secret kube-system/%s key '%s', not at hand here\n", f->path,
				f->secret_name, f->secret_key);
	}
	for (char **w = p->write; w && *w; w++)
		fprintf(out, "write   %s\n", *w);
	for (char **w = p->remove; w && *w; w++)
		fprintf(out, "remove  %s\n", *w);
	for (char **w = p->changed; w && *w; w++)
		fprintf(out, "changed %s\n", *w);
	return 0;
}
