/* Local accounts below the root: lookup in <root>/etc/passwd, creation with
 * useradd(8), and the sudoers entry. Logs its decisions (program code). */
#ifndef CCE_ACCOUNT_H
#define CCE_ACCOUNT_H

#include <stdbool.h>
#include <sys/types.h>

struct account {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;                 /* absolute, as in passwd */
};

/* True for a conservative POSIX user name: [a-z_][a-z0-9_-]*[$]?, <= 32
 * bytes. Anything else is never looked up, created or written anywhere. */
bool account_name_is_valid(const char *name);

/* Looks name up in <root>/etc/passwd (opened without following symlinks).
 * Returns 1 and fills *ret (account_done()), 0 when there is no such user,
 * -errno when the file cannot be read. The files, not NSS: the executor
 * serves local users only, and --root must mean the scratch root's users. */
int account_lookup(int rootfd, const char *name, struct account *ret);

/* Creates name like Gardener does (`useradd <name> -mU`: home directory,
 * user-private group) by exec'ing /usr/sbin/useradd with a minimal
 * environment, closed fds and a deadline; with a root other than "/" it
 * passes --prefix root. Returns 0 or -errno (logged). */
int account_create(const char *root, const char *name);

/* Writes /etc/sudoers.d/99-<name>-user (0440) with "<name> <spec>\n" below
 * rootfd, unless it is already identical: Gardener's name for the user
 * "gardener" (gardener/gardener pkg/component/extensions/
 * operatingsystemconfig/original/components/gardeneruser/templates/scripts/
 * reconcile.tpl.sh PATH_SUDOERS, also pkg/gardenlet/controller/bastion),
 * so a node gardener-node-agent configured keeps one file. Then the name
 * earlier versions wrote, /etc/sudoers.d/99-<name>, is removed when it is
 * ours (account_legacy_sudoers_is_ours()); anything else there is left
 * alone with a notice. spec "" means no entry (nothing done).
 * Returns 1 written or removed, 0 unchanged or not wanted, -errno (logged). */
int account_sudoers(int rootfd, const char *name, const char *spec);

/* Where account_sudoers() writes "99-<name>-user". */
#define ACCOUNT_SUDOERS_DIR "/etc/sudoers.d"

/* Whether the file found at the legacy name is one the executor wrote: a
 * regular file with one link, owned by root, mode 0440, holding exactly
 * "<name> <spec>\n" (what account_sudoers() wrote there before). Pure. */
struct stat;
bool account_legacy_sudoers_is_ours(const struct stat *st, const char *content, size_t len, const char *name,
				    const char *spec);

void account_done(struct account *a);

#endif
