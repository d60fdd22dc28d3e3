/* The Secret duty; see oscsecret.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"
#include "osc.h"
#include "oscsecret.h"

static void remember_rejection(struct oscsecret *o, const char *checksum, const char *data_sum)
{
	snprintf(o->rejected_checksum, sizeof(o->rejected_checksum), "%.64s", checksum);
	snprintf(o->rejected_data, sizeof(o->rejected_data), "%s", data_sum);
}

int oscsecret_take(struct oscsecret *o, const struct kube_secret *s, const struct oscsecret_env *env)
{
	const char *name = env->name;
	char sf[320], cs[80];
	snprintf(sf, sizeof(sf), "SECRET=%s/%s", env->ns, name);
	snprintf(cs, sizeof(cs), "CHECKSUM=%.64s", s->checksum ? s->checksum : "");

	if (!s->osc || !s->checksum) {
		log_fields(LOG_ERR, LOG_FIELDS(sf), "Secret %s has no %s; keeping the last good state", name,
			   !s->osc ? "data osc.yaml" : "annotation checksum/data-script");
		snprintf(env->error, env->errlen, "Secret %s incomplete", name);
		return 0;
	}
	if (o->osc && strcmp(s->checksum, o->checksum) == 0 && s->osc_len == o->osc_len &&
	    memcmp(s->osc, o->osc, o->osc_len) == 0)
		return 0; /* nothing new (resync, unrelated change) */
	char data_sum[65];
	int r = kube_secret_verify(s, data_sum);
	if (data_sum[0] && strcmp(s->checksum, o->rejected_checksum) == 0 && strcmp(data_sum, o->rejected_data) == 0)
		return 0; /* refused before, logged before */
	if (r == -EBADMSG) {
		remember_rejection(o, s->checksum, data_sum);
		log_fields(LOG_ERR, LOG_FIELDS(sf, cs),
			   "Secret %s rejected: annotation checksum/data-script \"%.64s\" does not match the SHA-256 "
			   "of osc.yaml; keeping the last good state",
			   name, s->checksum);
		snprintf(env->error, env->errlen, "checksum mismatch in Secret %s", name);
		events_emit(env->events, true, "OSCRefused",
			    "Secret %s refused: annotation checksum/data-script %.12s does not match osc.yaml", name,
			    s->checksum);
		return 0;
	}
	if (r < 0) { /* not the Secret's fault: looked at again next time */
		log_fields(LOG_ERR, LOG_FIELDS(sf, cs), "cannot verify Secret %s: %s; keeping the last good state", name,
			   strerror(-r));
		snprintf(env->error, env->errlen, "cannot verify Secret %s", name);
		return 0;
	}
	struct osc model;
	struct osc_error oerr = {};
	size_t n_files = 0, n_units = 0;
	r = osc_parse((const char *)s->osc, s->osc_len, env->state_dir, &model, &oerr);
	_cleanup_free_ char *osc_k8s = NULL;
	_cleanup_(gnaconfig_done) struct gnaconfig g = {};
	int gna = -ENOENT;
	if (r >= 0) {
		n_files = model.n_files;
		n_units = model.n_units;
		health_osc(env->health, &model);
		/* The kubernetes-version label follows the pool's version as
		 * gardener-node-agent's config in the OSC names it; so does
		 * token sync. */
		char gerr[GNACONFIG_ERROR_MAX];
		gna = gnaconfig_from_osc(&model, &g, gerr, sizeof(gerr));
		if (gna == 0)
			osc_k8s = g.kubernetes_version ? strdup(g.kubernetes_version) : NULL;
		else if (gna != -ENOENT)
			log_fields(LOG_ERR, LOG_FIELDS(sf, cs),
				   "Secret %s: gardener-node-agent's configuration in the OSC is malformed: %s; keeping "
				   "the last good settings from it",
				   name, gerr);
		osc_done(&model);
	}
	/* What the executor is handed must pass its checks too (libyaml reads
	 * UTF-16, whose NUL bytes the desired state refuses, say): a Secret
	 * refused here keeps the last good state, instead of being adopted
	 * and then never written. */
	const char *why = NULL;
	if (r >= 0 && memchr(s->osc, '\0', s->osc_len)) {
		r = -EINVAL;
		why = "a NUL byte (UTF-16?)";
	} else if (r >= 0)
		r = env->check(env->userdata, (char *)s->osc, s->osc_len, s->checksum);
	if (r < 0) {
		if (r != -ENOMEM)
			remember_rejection(o, s->checksum, data_sum);
		log_fields(LOG_ERR, LOG_FIELDS(sf, cs), "Secret %s rejected: invalid osc.yaml: %s; keeping the last good state",
			   name, why ? why : oerr.message[0] ? oerr.message : strerror(-r));
		snprintf(env->error, env->errlen, "invalid OSC in Secret %s", name);
		events_emit(env->events, true, "OSCRefused", "Secret %s refused: invalid osc.yaml: %s", name,
			    why ? why : oerr.message[0] ? oerr.message : strerror(-r));
		return 0;
	}
	log_fields(LOG_INFO, LOG_FIELDS(sf, cs), "Secret %s verified: checksum %.12s, %zu files, %zu units", name,
		   s->checksum, n_files, n_units);

	char *copy = malloc(s->osc_len + 1);
	if (!copy) {
		log_error_errno(-ENOMEM, "cannot keep the OSC");
		return 0;
	}
	memcpy(copy, s->osc, s->osc_len);
	copy[s->osc_len] = '\0';
	free(o->osc);
	o->osc = copy;
	o->osc_len = s->osc_len;
	snprintf(o->checksum, sizeof(o->checksum), "%s", s->checksum);
	/* A malformed gardener-node-agent configuration changes none of the
	 * settings it provides; the OSC itself is applied. */
	if (gna == 0 || gna == -ENOENT) {
		free(o->k8s_version);
		o->k8s_version = TAKE_PTR(osc_k8s);
		if (tokensync_set(env->tokens, g.token_syncs, g.n_token_syncs, g.token_sync_period_ms) < 0)
			log_error_errno(-ENOMEM, "cannot follow the token Secrets");
	}
	if (gna == 0 && g.sync_period_ms && g.sync_period_ms != GNA_OSC_SYNC_PERIOD_MS)
		log_notice("controllers.operatingSystemConfig.syncPeriod is %llu s: not followed, the OSC is re-applied "
			   "every %u s by cloud-config-exec.timer (gardener-node-agent's default; gnaconfig.h)",
			   (unsigned long long)(g.sync_period_ms / 1000), GNA_OSC_SYNC_PERIOD_MS / 1000);
	if (gna == 0) {
		/* Server, CA and Secret name follow once this OSC is applied. */
		gnaconfig_done(&o->gna_next);
		o->gna_next = g;
		g = (struct gnaconfig){};
		o->gna_next_set = true;
		snprintf(o->gna_next_checksum, sizeof(o->gna_next_checksum), "%s", s->checksum);
	}
	o->rejected_checksum[0] = '\0';
	o->rejected_data[0] = '\0';
	return 1;
}

bool oscsecret_take_gna(struct oscsecret *o, const char *checksum, struct gnaconfig *ret)
{
	if (!o->gna_next_set || strcmp(o->gna_next_checksum, checksum) != 0)
		return false;
	o->gna_next_set = false;
	*ret = o->gna_next;
	o->gna_next = (struct gnaconfig){};
	return true;
}

void oscsecret_drop(struct oscsecret *o)
{
	free(o->osc);
	o->osc = NULL;
}

void oscsecret_done(struct oscsecret *o)
{
	free(o->osc);
	free(o->k8s_version);
	gnaconfig_done(&o->gna_next);
	*o = (struct oscsecret){};
}
