/* Writing into a user's home directory as root, immune to that user.
 *
 * The user owns the home and can plant anything there at any time: a
 * symlink or a hard link in place of .ssh or authorized_keys, a FIFO, a
 * directory. So every step goes through a verified directory fd:
 *   - the home's parent is opened below the root one component at a time
 *     with O_NOFOLLOW (following only links root alone can have made, as an
 *     image's home -> var/home: FSX_FOLLOW_ROOT_SYMLINKS) and must be owned
 *     by root; the home itself is opened
 *     with O_NOFOLLOW|O_DIRECTORY from it and must be owned by the user or
 *     by root;
 *   - .ssh is opened with O_NOFOLLOW|O_DIRECTORY (created 0700 when
 *     missing); a symlink or non-directory there (sshd would follow the link
 *     to whatever keys it finds) is moved aside to
 *     .ssh.node-agent-moved-<UTC time>-<16 hex from getrandom()>, never
 *     followed or removed; owner and mode are fixed through the fd (user,
 *     0700);
 *   - the old authorized_keys is read only when it is a regular file with
 *     one link, owned by the user or root, opened O_NOFOLLOW|O_NONBLOCK, at
 *     most HOME_KEYS_MAX bytes. Otherwise its "content" is not read: a
 *     symlink or hard link is replaced (nothing is lost, the data has another
 *     name); anything else (over the ceiling, leased, a FIFO, a directory,
 *     another user's, unreadable) is kept aside as
 *     authorized_keys.node-agent-moved-<UTC time>-<16 random hex> in .ssh,
 *     never deleted: the new file is made under that fresh name and swapped
 *     with the old one by renameat2(RENAME_EXCHANGE). Moved-aside names are
 *     unpredictable (64 bits of getrandom()), so no name the user can plant
 *     in advance (a hard link costs them no inode) blocks the move, and no
 *     free predictable name is ever needed;
 *   - the new file is a temporary in .ssh, fchown'ed, fchmod'ed 0600,
 *     fsync'ed and renamed over the old name: a planted link is replaced,
 *     not followed. Temporaries of an interrupted write (.#authorized_keys.
 *     <16 hex>, regular, the user's or root's) are removed by the next run.
 * Every refusal is logged with USER=, described in why (for the result) and
 * returns -errno; nothing outside the home is ever opened for writing. */
#ifndef CCE_HOME_H
#define CCE_HOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "account.h"

#define HOME_KEYS_MAX (1u << 20)
#define HOME_WHY_MAX 256

/* Opens (creating if missing) the verified ~/.ssh of a. Returns the fd. */
int home_open_ssh(int rootfd, const struct account *a, time_t now, char *why, size_t why_size);

/* Removes the executor's own temporaries from ~/.ssh (see above), each
 * logged. Returns how many, or -errno. */
int home_remove_temps(int sshfd, const struct account *a);

/* Reads ~/.ssh/authorized_keys as described above. Returns 1 with the
 * content in *ret (malloc'ed; "" when absent or not safe to read, then
 * *ret_ignored tells why, a static string, or NULL, and *ret_move_aside
 * whether what is there must be moved aside before the new file is
 * written), or -errno. A root-owned file is read, and *ret_keys_only set:
 * root may have left anything there (a private key moved in by the user),
 * so only its key lines may be carried into the user's file. */
int home_read_keys(int sshfd, const struct account *a, char **ret, size_t *ret_len, const char **ret_ignored,
		   bool *ret_keys_only, bool *ret_move_aside, char *why, size_t why_size);

/* Replaces ~/.ssh/authorized_keys with data (0600, a's uid/gid); with move,
 * what is there is kept under a fresh moved-aside name, put in moved ("" if
 * nothing was there), by the exchange described above. Returns 1 written, 0
 * already identical, -errno (-EAGAIN: the name was replaced again under us;
 * refusals are logged, why says what failed). */
int home_write_keys(int sshfd, const struct account *a, const char *data, size_t len, bool move, time_t now,
		    char *moved, size_t moved_size, char *why, size_t why_size);

/* Renames ~/.ssh/name (whatever it is) aside as above: 1 with the new name
 * in moved, 0 when there is nothing, -errno. For authorized_keys2, which
 * sshd reads by default too, in ssh.exclusive mode. */
int home_move_aside(int sshfd, const struct account *a, const char *name, time_t now, char *moved,
		    size_t moved_size, char *why, size_t why_size);

/* Pure, for tests: "<name>.node-agent-moved-<YYYYmmddTHHMMSSZ>-<rnd as 16
 * lowercase hex>" for now. -ENAMETOOLONG, -EINVAL. */
int home_moved_name(const char *name, time_t now, uint64_t rnd, char *buf, size_t size);

#endif
