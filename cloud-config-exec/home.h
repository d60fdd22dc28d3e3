/* Writing into a user's home directory as root, immune to that user.
 *
 * The user owns the home and can plant anything there at any time: a
 * symlink or a hard link in place of .ssh or authorized_keys, a FIFO, a
 * directory. So every step goes through a verified directory fd:
 *   - the home's parent is opened below the root one component at a time
 *     with O_NOFOLLOW and must be owned by root; the home itself is opened
 *     with O_NOFOLLOW|O_DIRECTORY from it and must be owned by the user or
 *     by root;
 *   - .ssh is opened with O_NOFOLLOW|O_DIRECTORY (created 0700 when
 *     missing); a symlink or non-directory there is refused, never followed
 *     or removed; owner and mode are fixed through the fd (user, 0700);
 *   - the old authorized_keys is read only when it is a regular file with
 *     one link, owned by the user or root, opened O_NOFOLLOW|O_NONBLOCK, at
 *     most HOME_KEYS_MAX bytes; otherwise its "content" is not the user's
 *     (a link, a FIFO...) and is ignored, never read;
 *   - the new file is a temporary in .ssh, fchown'ed, fchmod'ed 0600,
 *     fsync'ed and renamed over the old name: a planted link is replaced,
 *     not followed. A directory in its place is refused.
 * Every refusal is logged with USER= and returns -errno; nothing outside
 * the home is ever opened for writing. */
#ifndef CCE_HOME_H
#define CCE_HOME_H

#include <stdbool.h>
#include <stddef.h>

#include "account.h"

#define HOME_KEYS_MAX (1u << 20)

/* Opens (creating if missing) the verified ~/.ssh of a. Returns the fd. */
int home_open_ssh(int rootfd, const struct account *a);

/* Reads ~/.ssh/authorized_keys as described above. Returns 1 with the
 * content in *ret (malloc'ed; "" when absent or not safe to read, then
 * *ret_ignored tells why, a static string, or NULL), or -errno: -EMSGSIZE
 * when a regular file is over the ceiling (a refusal: it is left alone). A
 * root-owned file is read, and *ret_keys_only set: root may have left
 * anything there (a private key moved in by the user), so only its key lines
 * may be carried into the user's file. */
int home_read_keys(int sshfd, const struct account *a, char **ret, size_t *ret_len, const char **ret_ignored,
		   bool *ret_keys_only);

/* Replaces ~/.ssh/authorized_keys with data (0600, a's uid/gid). Returns 1
 * written, 0 already identical, -errno. */
int home_write_keys(int sshfd, const struct account *a, const char *data, size_t len);

#endif
