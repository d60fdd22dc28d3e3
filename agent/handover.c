/* The desired state handed to the executor; see handover.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "handover.h"
#include "http.h"
#include "log.h"

#define HANDOVER_RETRY_BASE_MS 1000u
#define HANDOVER_RETRY_CAP_MS 30000u

/* A write that failed (disk full, I/O error): 1 s doubling every 2 s up to
 * 30 s, full jitter (lib/base/backoff.h). */
static const struct backoff_policy handover_policy = { .base_ms = HANDOVER_RETRY_BASE_MS, .double_ms = 2000,
						       .cap_ms = HANDOVER_RETRY_CAP_MS };

/* A copy of the OSC now in the desired state (failure to copy only means
 * the next change is judged as a first apply: not held). */
static void handover_remember_osc(struct handover *h, const char *osc, size_t len)
{
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, osc, len);
		copy[len] = '\0';
	}
	free(h->osc);
	h->osc = copy;
	h->osc_len = copy ? len : 0;
}

int handover_write(struct handover *h, int state_fd, const char *state_dir, const struct desired *d, uint64_t now,
		   char *why, size_t whylen)
{
	struct desired g = *d;
	_cleanup_free_ char *key = NULL, *doc = NULL;
	size_t key_len, doc_len;
	g.generation = 0;
	int r = desired_format(&g, &key, &key_len);
	if (r >= 0 && h->key && strcmp(h->key, key) == 0)
		return 0;
	g.generation = h->generation + 1;
	if (r >= 0)
		r = desired_format(&g, &doc, &doc_len);
	if (r < 0) {
		snprintf(why, whylen, "cannot format the desired state: %s", strerror(-r));
		return log_error_errno(r, "cannot format the desired state");
	}
	r = fsx_write_atomic_at(state_fd, HANDOVER_FILE, doc, doc_len, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0) {
		if (!h->retry.policy)
			h->retry.policy = &handover_policy;
		bool first = !backoff_failing(&h->retry);
		uint64_t delay = backoff_fail(&h->retry, now, 0);
		h->wake_at = now + delay;
		snprintf(why, whylen, "cannot write %s/%s: %s", state_dir, HANDOVER_FILE, strerror(-r));
		/* Once per condition (and when it ends); retries at debug. */
		return log_full(first ? LOG_ERR : LOG_DEBUG, r, __FILE__, __LINE__, NULL,
				"cannot write %s/%s (trying again with back-off, next in %.1f s)", state_dir,
				HANDOVER_FILE, (double)delay / 1000.0);
	}
	uint64_t failed_attempts = 0;
	if (h->retry.policy && backoff_reset(&h->retry, now, NULL, &failed_attempts))
		log_notice("wrote %s/%s again after %llu failed attempt(s)", state_dir, HANDOVER_FILE,
			   (unsigned long long)failed_attempts);
	h->wake_at = 0;
	h->generation++;
	pickup_written(&h->pickup, h->generation, now);
	free(h->key);
	h->key = TAKE_PTR(key);
	if (d->osc != h->osc)
		handover_remember_osc(h, d->osc, d->osc_len);
	memmove(h->checksum, d->checksum, sizeof(h->checksum));
	char cs[80], gen[48];
	snprintf(cs, sizeof(cs), "CHECKSUM=%s", h->checksum);
	snprintf(gen, sizeof(gen), "GENERATION=%llu", (unsigned long long)h->generation);
	log_fields(LOG_NOTICE, LOG_FIELDS(cs, gen), "wrote desired state generation %llu for checksum %.12s%s%s",
		   (unsigned long long)h->generation, h->checksum, d->restart_units ? ", restart request " : "",
		   d->restart_units ? d->restart_id : "");
	return 1;
}

void handover_load(struct handover *h, int state_fd, const char *state_dir, char *restart_id, size_t restart_id_size,
		   char ***restart_units, uint64_t now)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(state_fd, HANDOVER_FILE, DESIRED_MAX, &data, &len);
	if (r < 0) {
		if (r != -ENOENT)
			log_warning_errno(r, "ignoring %s/%s", state_dir, HANDOVER_FILE);
		return;
	}
	struct desired d;
	const char *err = NULL;
	r = desired_parse(data, len, &d, &err);
	if (r < 0) {
		log_warning_errno(r, "ignoring %s/%s: %s", state_dir, HANDOVER_FILE, err ? err : "invalid");
		return;
	}
	h->generation = d.generation;
	pickup_written(&h->pickup, h->generation, now);
	memcpy(h->checksum, d.checksum, sizeof(h->checksum));
	handover_remember_osc(h, d.osc, d.osc_len);
	/* Its restart request, unless the Node's current one is known. */
	if (d.restart_id && d.restart_units && strlen(d.restart_id) < restart_id_size && !*restart_units) {
		snprintf(restart_id, restart_id_size, "%s", d.restart_id);
		*restart_units = TAKE_PTR(d.restart_units);
	}
	/* The generation-0 form of what is on disk, to compare with. */
	d.generation = 0;
	char *key = NULL;
	size_t key_len;
	if (desired_format(&d, &key, &key_len) == 0) {
		free(h->key);
		h->key = key;
	}
	log_info("previous desired state: generation %llu, checksum %.12s", (unsigned long long)h->generation,
		 d.checksum);
	desired_done(&d);
}

void handover_rewrite(int state_fd, const char *state_dir)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(state_fd, HANDOVER_FILE, DESIRED_MAX, &data, &len);
	if (r >= 0)
		r = fsx_write_atomic_at(state_fd, HANDOVER_FILE, data, len, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0)
		log_warning_errno(r, "cannot write %s/%s again", state_dir, HANDOVER_FILE);
}

void handover_forget(struct handover *h)
{
	free(h->key);
	h->key = NULL;
	h->generation = 0;
	h->checksum[0] = '\0';
	h->pickup = (struct pickup){ 0 };
}

static int handover_remove_temp(int dfd, const char *name, size_t target_len, void *userdata)
{
	(void)userdata;
	if (target_len != strlen(HANDOVER_FILE) || memcmp(name + 2, HANDOVER_FILE, target_len) != 0)
		return 0;
	return unlinkat(dfd, name, 0) == 0;
}

/* A write killed between the temporary's creation and the rename leaves
 * the temporary behind (desired.json itself is whole: old or new). Only one
 * agent writes here, and none is writing yet: remove them, so a crash loop
 * cannot fill the disk (tests/integration/062-agent-kill.sh). */
void handover_remove_temporaries(int state_fd, const char *state_dir)
{
	int n = fsx_for_each_temp(state_fd, handover_remove_temp, NULL);
	if (n > 0)
		log_notice("removed %d temporary file(s) left in %s by an interrupted write of %s", n, state_dir,
			   HANDOVER_FILE);
}

void handover_done(struct handover *h)
{
	free(h->key);
	free(h->osc);
	*h = (struct handover){};
}
