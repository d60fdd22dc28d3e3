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

/* Writes /etc/sudoers.d/99-<name> (0440) with "<name> <spec>\n" below rootfd,
 * unless it is already identical. spec "" means no entry (nothing done).
 * Returns 1 written, 0 unchanged or not wanted, -errno (logged). */
int account_sudoers(int rootfd, const char *name, const char *spec);

void account_done(struct account *a);

#endif
