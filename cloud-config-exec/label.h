/* SELinux labels for what the executor creates: each new file and
 * directory gets the type the node's file contexts give its path, as
 * restorecon would give it, set before the creation (setfscreatecon) the
 * way SELinux-aware writers of system files do it (dpkg, systemd, install
 * -Z): libselinux's selabel_lookup_raw() on the final path, so a file
 * written by temporary file and rename gets its name's type, not the
 * temporary's. Without it a new entry takes its directory's type: /opt/bin
 * made in /opt would be usr_t where the file contexts say bin_t,
 * ~/.ssh user_home_dir_t instead of ssh_home_t, /etc/systemd/journald.conf
 * etc_t instead of syslog_conf_t.
 *
 * It hooks into lib/base/fsx (fsx_set_label), which makes every directory
 * and file the apply creates; home.c's ~/.ssh and authorized_keys, made
 * without fsx, call label_prepare_at() and label_done() themselves.
 *
 * Where SELinux is off (or not in the kernel) nothing happens. With it on,
 * the policy decides whether the executor may create that type at all
 * (selinux/node_agent.te): a path whose type it may not create fails with
 * EACCES, as any other denied write. */
#ifndef CCE_LABEL_H
#define CCE_LABEL_H

#include <sys/types.h>

/* Loads the file contexts and hooks into fsx when SELinux is enabled; root
 * is the --root (lookups use the path below it). Call before the seccomp
 * filter. Returns 1 labelling, 0 SELinux off (nothing to do), -errno
 * (logged) when SELinux is on and the file contexts cannot be loaded. */
int label_init(const char *root);

/* Sets the creation label for dirfd/name of the file type bits type (S_IFREG,
 * S_IFDIR): the file contexts' type for that path. 0 when set or when
 * there is nothing to set (labelling off, no file context for the path),
 * -errno (logged) when SELinux enforces and the label cannot be set;
 * permissive, that is logged at debug level and 0. Follow with
 * label_done(). */
int label_prepare_at(int dirfd, const char *name, mode_t type);

/* Labels the open file fd as the file contexts label path (restorecon of
 * what will be reached at path: the kubelet data volume's lost+found before
 * the volume is mounted on /var/lib/kubelet). 0 when done or nothing to do
 * (labelling off, no file context), -errno (logged). */
int label_fd_as(int fd, const char *path, mode_t type);

/* Clears the creation label again (what the kernel gives is the default). */
void label_done(void);

/* Unhooks and frees the file contexts. */
void label_fini(void);
/* For _cleanup_(label_finip) on label_init()'s result. */
static inline void label_finip(const int *labelling)
{
	if (*labelling > 0)
		label_fini();
}

#endif
