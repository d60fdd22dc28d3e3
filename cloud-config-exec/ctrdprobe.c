/* The containerd probe; see ctrdprobe.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "cleanup.h"
#include "ctrdhealth.h"
#include "ctrdprobe.h"
#include "fsx.h"
#include "images.h"
#include "log.h"

static char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_lang[] = "LANG=C", e_lc[] = "LC_ALL=C";
static char *const child_env[] = { e_path, e_lang, e_lc, NULL };

/* The last line ctr wrote (its error: stderr is merged into what is
 * captured), control bytes replaced, into buf. */
static void last_line(const char *out, size_t len, char *buf, size_t size)
{
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' '))
		len--;
	size_t start = len;
	while (start > 0 && out[start - 1] != '\n')
		start--;
	size_t n = 0;
	for (size_t i = start; i < len && n + 1 < size; i++)
		buf[n++] = (unsigned char)out[i] < 0x20 || out[i] == 0x7f ? '?' : out[i];
	buf[n] = '\0';
}

/* One probe: h->healthy with the server version, or why not. */
static void probe(const char *address, struct ctrdhealth *h)
{
	char a0[] = "ctr", a1[] = "--address", a3[] = "--connect-timeout", a4[] = CTRDPROBE_CTR_CONNECT_TIMEOUT,
	     a5[] = "--timeout", a6[] = CTRDPROBE_CTR_TIMEOUT, a7[] = "version";
	char *argv[] = { a0, a1, (char *)(uintptr_t)address, a3, a4, a5, a6, a7, NULL };
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int status = 0;
	int r = child_run_merged(IMAGES_CTR, argv, child_env, CTRDPROBE_TIMEOUT_MS, 4096, &out, &len, &status);
	if (r == -ETIMEDOUT)
		snprintf(h->error, sizeof(h->error), "no answer from containerd at %.64s within %u s (ctr version killed)",
			 address, CTRDPROBE_TIMEOUT_MS / 1000u);
	else if (r < 0)
		snprintf(h->error, sizeof(h->error), "cannot run %s version: %s", IMAGES_CTR, strerror(-r));
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* ctr's own message (a refused connection, its deadline) goes
		 * into the verdict: logged when the verdict changes, not on
		 * every run. */
		char msg[CTRDHEALTH_ERROR_MAX + 1];
		last_line(out ? out : "", out ? len : 0, msg, sizeof(msg));
		int n = snprintf(h->error, sizeof(h->error), "ctr version at %.64s failed (%s %d)%s", address,
				 WIFEXITED(status) ? "exit status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), msg[0] ? ": " : "");
		/* As much of the message as fits. */
		for (size_t i = 0; n >= 0 && (size_t)n + 1 < sizeof(h->error) && msg[i]; i++)
			h->error[n++] = msg[i];
		if (n >= 0 && (size_t)n < sizeof(h->error))
			h->error[n] = '\0';
	}
	else if (ctrdhealth_server_version(out, h->server_version) < 0)
		snprintf(h->error, sizeof(h->error), "ctr version at %.64s printed no server version", address);
	else {
		h->healthy = true;
		return;
	}
	h->server_version[0] = '\0';
}

int ctrdprobe_run(int rootfd, const char *state_dir, const char *address)
{
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, state_dir, FSX_MKDIR, 0755);
	if (dfd < 0)
		return log_error_errno(dfd, "Cannot open %s", state_dir);

	/* The last verdict, to log only a change. */
	struct ctrdhealth last = {};
	bool have_last = false;
	_cleanup_free_ char *old = NULL;
	size_t old_len;
	if (fsx_read_at(dfd, CTRDHEALTH_FILE, CTRDHEALTH_MAX, &old, &old_len) == 0)
		have_last = ctrdhealth_parse(old, old_len, &last, NULL) == 0;

	struct ctrdhealth h = { .checked_at = time(NULL) };
	probe(address, &h);
	/* Only a change of the verdict is logged (the unit's LogLevelMax=notice
	 * drops everything below, systemd's lines about each run too). */
	if (h.healthy && (!have_last || !last.healthy))
		log_notice("containerd at %s is healthy (version %s)", address, h.server_version);
	else if (!h.healthy && (!have_last || last.healthy))
		log_warning("containerd is unhealthy: %s", h.error);
	else
		log_debug("containerd: %s", h.healthy ? "healthy" : h.error);

	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = ctrdhealth_format(&h, &text, &len);
	if (r < 0)
		return log_error_errno(r, "Cannot format %s", CTRDHEALTH_FILE);
	r = fsx_write_atomic_at(dfd, CTRDHEALTH_FILE, text, len, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0)
		return log_error_errno(r, "Cannot write %s/%s", state_dir, CTRDHEALTH_FILE);
	return 0;
}
