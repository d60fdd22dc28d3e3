/* The Secret duty: takes the OSC Secret as the watch delivers it, verifies
 * its checksum (the annotation checksum/data-script against the SHA-256 of
 * osc.yaml), validates the OSC (osc_parse(), and the desired state the agent
 * would write from it), and keeps the last good one. A Secret refused is
 * remembered (its annotation and the SHA-256 of its data), so it is logged
 * once; a corrected one under the same annotation is looked at again.
 *
 * From gardener-node-agent's configuration in the OSC (gnaconfig.h) it
 * takes the kubernetes-version label and the token syncs at once, and
 * keeps the rest (server, CA, Secret name) until that OSC is applied
 * (oscsecret_take_gna()). */
#ifndef NA_AGENT_OSCSECRET_H
#define NA_AGENT_OSCSECRET_H

#include <stdbool.h>
#include <stddef.h>

#include "events.h"
#include "gnaconfig.h"
#include "health.h"
#include "kube.h"
#include "tokensync.h"

struct oscsecret {
	/* The last good OSC: verified checksum, parsed by osc_parse(). */
	char *osc;                  /* NUL-terminated, or NULL: none yet */
	size_t osc_len;
	char checksum[65];
	char *k8s_version;          /* from gardener-node-agent's config in that OSC, or NULL */
	/* gardener-node-agent's configuration in the last good OSC, to follow
	 * once it is applied. */
	struct gnaconfig gna_next;
	bool gna_next_set;
	char gna_next_checksum[65];
	/* The last Secret refused. */
	char rejected_checksum[65];
	char rejected_data[65];
};

/* What taking a Secret touches outside the duty. */
struct oscsecret_env {
	const char *ns;             /* the Secret's namespace and name, for messages */
	const char *name;
	const char *state_dir;      /* for osc_parse() */
	struct health *health;      /* is told each OSC that parses (health_osc()) */
	struct events *events;      /* OSCRefused */
	struct tokensync *tokens;   /* follows the token syncs of each OSC taken */
	/* 0 when the agent can format its desired state with this OSC, or
	 * -errno (-ENOMEM is not held against the Secret). */
	int (*check)(void *userdata, char *osc, size_t osc_len, const char *checksum);
	void *userdata;
	char *error;                /* receives a one-line reason for the service status */
	size_t errlen;
};

/* Takes the Secret s (not a deletion) as described above, logging each
 * decision once. Returns 1 when its OSC is the new last good one, 0 when
 * nothing changed (the same OSC, a refusal: then env->error is set, except
 * for a refusal already reported). */
int oscsecret_take(struct oscsecret *o, const struct kube_secret *s, const struct oscsecret_env *env);

/* When gardener-node-agent's configuration of the OSC checksum is still to
 * be followed: hands it over in *ret (the caller frees it with
 * gnaconfig_done()) and returns true, once. */
bool oscsecret_take_gna(struct oscsecret *o, const char *checksum, struct gnaconfig *ret);

/* Forgets the last good OSC (--once switching to another Secret). */
void oscsecret_drop(struct oscsecret *o);

/* Frees what o owns. */
void oscsecret_done(struct oscsecret *o);

#endif
