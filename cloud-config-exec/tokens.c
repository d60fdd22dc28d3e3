/* Token sync, the executor's half; see tokens.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fsx.h"
#include "log.h"
#include "tokens.h"

int tokens_apply(int rootfd, const struct desired *d)
{
	if (!d)
		return 0;
	int written = 0, first_error = 0;
	for (size_t i = 0; i < d->n_tokens; i++) {
		const struct desired_token *t = &d->tokens[i];
		_cleanup_free_ char *dir = strdup(t->path);
		if (!dir)
			return -ENOMEM;
		char *slash = strrchr(dir, '/');
		const char *base = t->path + (slash - dir) + 1;
		*slash = '\0';
		_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, *dir ? dir : "/", FSX_MKDIR, 0755);
		int r = dfd;
		if (dfd >= 0)
			r = fsx_write_atomic_at(dfd, base, t->token, strlen(t->token), 0640, 0, 0, FSX_SKIP_IF_SAME);
		if (r < 0) {
			log_error_errno(r, "Cannot write the synced token %s", t->path);
			if (!first_error)
				first_error = r;
			continue;
		}
		if (r > 0) {
			log_notice("Wrote the synced token %s", t->path);
			written++;
		}
	}
	return first_error ? first_error : written;
}
