/* Safe file operations: bounded reads, crash-safe atomic replacement, and
 * directory walks that never follow a symlink anyone but root could have
 * made (and by default none at all).
 *
 * All functions return >= 0 on success and -errno on failure, never log above
 * debug level, and take directory file descriptors so that callers resolve a
 * path once, from a directory they have verified, instead of re-resolving it
 * (and racing whoever else can write there). */
#ifndef NA_FSX_H
#define NA_FSX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FSX_UID_KEEP ((uid_t)-1)
#define FSX_GID_KEEP ((gid_t)-1)

enum {
	/* fsx_write_atomic_at: leave an existing file alone when its content,
	 * mode and owner already match (returns 0 instead of 1). */
	FSX_SKIP_IF_SAME = 1 << 0,
	/* fsx_open_dir_at: create missing components (mode from the call). */
	FSX_MKDIR = 1 << 1,
	/* fsx_open_dir_at: follow a symlink among the directories of the path
	 * when only root can have made it (see there), as the merged-/usr
	 * /lib -> usr/lib or an image's /home -> var/home. For paths that
	 * only root chooses; code that walks into a user's home must not. */
	FSX_FOLLOW_ROOT_SYMLINKS = 1 << 2,
};

/* Symlinks one walk follows at most with FSX_FOLLOW_ROOT_SYMLINKS. */
#define FSX_SYMLINK_HOPS_MAX 16

/* Labelling what fsx creates. A program that gives new files and
 * directories a label of their own (cloud-config-exec: the SELinux type the
 * file contexts give the path, cloud-config-exec/label.h) sets one with
 * fsx_set_label() at its start: before fsx creates a directory (the
 * walks' FSX_MKDIR) or a file (the temporary of fsx_open_temp_at() and
 * fsx_write_atomic_at()), prepare() gets the directory, the final name
 * (the name the temporary is renamed to, not its own) and the file type
 * bits; a negative return fails the creation with it. done() follows the
 * creation, whatever its outcome. Like log.c's target this is process
 * state, set once before anything is created; without it (node-agent,
 * authkeys-cmd, the tests) nothing is labelled and a new entry takes
 * whatever the kernel gives it. */
struct fsx_label {
	int (*prepare)(int dirfd, const char *name, mode_t type);
	void (*done)(void);
};
void fsx_set_label(const struct fsx_label *label);

/* Reads all of fd (from offset 0 onwards, a regular file only) into a new
 * NUL-terminated buffer. -EFBIG if it holds more than max bytes, -EBADFD when
 * fd is not a regular file. On success *ret (owned by the caller) and
 * *ret_len are set. */
int fsx_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Opens name (a single component, or a relative path whose every component is
 * opened without following symlinks) below dirfd and reads it as above.
 * O_NONBLOCK keeps a planted FIFO from blocking us; -ELOOP for a symlink. */
int fsx_read_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

/* Creates the temporary ".#<name>.<16 random hex>" in dirfd (O_EXCL,
 * O_NOFOLLOW, mode 0600, access O_WRONLY or O_RDWR), the name
 * fsx_write_atomic_at() and fsx_temp_target() use; its name goes to tmp.
 * Returns the fd (the caller closes it, and renames or unlinks tmp), or
 * -errno. */
int fsx_open_temp_at(int dirfd, const char *name, int access, char tmp[static NAME_MAX + 1]);

/* Atomically replaces dirfd/name with data: a temporary file in the same
 * directory is written, chowned (unless FSX_*_KEEP), chmodded to mode,
 * fsynced, renamed over name, and the directory is fsynced. name must be a
 * single path component; whatever is at name (a symlink too) is replaced,
 * never followed. Returns 1 when the file was written, 0 when
 * FSX_SKIP_IF_SAME found it already identical. */
int fsx_write_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, unsigned flags);

/* Is name the temporary fsx_write_atomic_at() makes for a target,
 * ".#<target>.<16 lowercase hex>" (target cut at 200 bytes)? Returns the
 * target's length (it starts at name + 2), 0 when it is not one. */
size_t fsx_temp_target(const char *name);

/* Calls fn(dirfd, name, target_len, userdata) for each entry of the
 * directory dirfd whose name is such a temporary: leftovers of a write
 * killed between creating and renaming it. fn decides whether the file is
 * its own (the name alone proves nothing in a directory others can write),
 * removes it and logs. Returns the sum of fn's positive returns, or -errno
 * when the directory cannot be read. */
int fsx_for_each_temp(int dirfd, int (*fn)(int dirfd, const char *name, size_t target_len, void *userdata),
		      void *userdata);

/* Opens the directory at the relative path below dirfd, one component at a
 * time with O_NOFOLLOW. Absolute paths are taken relative to dirfd (dirfd is
 * "the root"); a ".." component of path is refused (-EPERM). With FSX_MKDIR,
 * missing components are created with mode (as root:root unless the
 * caller's credentials say otherwise). Returns the new O_DIRECTORY fd.
 *
 * A symlink component gives -ELOOP, unless FSX_FOLLOW_ROOT_SYMLINKS is set
 * and the link is owned by root and sits in a directory owned by root that
 * is neither group- nor other-writable, so that only root can have planted
 * it. Such a link is read (at most PATH_MAX bytes) and the walk continues
 * with its target: an absolute target from dirfd, never from the host's
 * "/" (like openat2's RESOLVE_IN_ROOT, so pass the root fd, not a
 * subdirectory), a relative one from the link's directory. A ".." in a
 * target climbs to the directory the walk came through (-EAGAIN if that
 * is not the physical parent any more, e.g. after a rename) and never above
 * dirfd (-EPERM). More than FSX_SYMLINK_HOPS_MAX links: -ELOOP. Missing
 * directories of a target are created as above with FSX_MKDIR. Nothing
 * else changes: the files that fsx_write_atomic_at and fsx_read_at handle
 * are never followed. */
int fsx_open_dir_at(int dirfd, const char *path, unsigned flags, mode_t mode);

/* Opens the parent directory of path below dirfd (as fsx_open_dir_at, with
 * the same flags) and returns it; *ret_name points into path at the final
 * component, which is not looked at (a symlink there stays for the caller
 * to refuse or replace). -EINVAL for a path without a final component
 * ("/", "a/.."). */
int fsx_open_parent_at(int dirfd, const char *path, unsigned flags, mode_t mode, const char **ret_name);

/* Opens the root prefix ("/" when root is NULL or empty) as a directory fd. */
int fsx_open_root(const char *root);

/* Opens /dev/null on each of fds 0, 1 and 2 that is closed, so that no file
 * the program opens later becomes its stdin, stdout or stderr (and gets log
 * lines or printed keys written into it). The first call of every main(). */
int fsx_std_fds(void);

/* fsync() of a directory fd. */
int fsx_fsync_dir(int dirfd);

/* True when path is absolute, normalised (no "//", no "." or ".."
 * components, no trailing "/"), free of control bytes and at most max bytes. */
bool fsx_path_is_safe(const char *path, size_t max);

#endif
