/* What the Node asks of this node; see nodereq.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "log.h"
#include "nodereq.h"
#include "strx.h"

void nodereq_update(struct nodereq *q, const struct kube_node *n, bool keys, const char *nf)
{
	/* The key document from the annotation, when enabled. */
	if (keys && !strx_eq(q->key_document, n->authorized_keys)) {
		if (n->authorized_keys && strlen(n->authorized_keys) > DESIRED_KEY_DOCUMENT_MAX)
			log_fields(LOG_ERR, LOG_FIELDS(nf), "annotation %s larger than %u bytes; ignored",
				   KUBE_ANN_AUTHORIZED_KEYS, DESIRED_KEY_DOCUMENT_MAX);
		else {
			log_fields(LOG_INFO, LOG_FIELDS(nf), "key document from annotation %s %s", KUBE_ANN_AUTHORIZED_KEYS,
				   n->authorized_keys ? "changed" : "removed");
			strx_replace(&q->key_document, n->authorized_keys);
		}
	}

	/* A restart request. */
	if (!n->restart_services) {
		strx_replace(&q->restart_value, NULL); /* the same value set again is a new request */
		q->restart_invalid = false;
	}
	if (n->restart_services && !strx_eq(q->restart_value, n->restart_services)) {
		char **units = NULL;
		char bad[64] = "";
		int r = node_parse_restart(n->restart_services, &units, bad, sizeof(bad));
		strx_replace(&q->restart_value, n->restart_services);
		q->restart_invalid = r < 0;
		if (r == -ENODATA) {
			log_fields(LOG_NOTICE, LOG_FIELDS(nf), "annotation %s is empty; removing it", KUBE_ANN_RESTART);
		} else if (r < 0) {
			log_fields(LOG_ERR, LOG_FIELDS(nf), "annotation %s: %s \"%s\"; removing the request unexecuted",
				   KUBE_ANN_RESTART, r == -E2BIG ? "too many units" : "invalid unit name", bad);
		} else {
			strv_free(q->restart_units);
			q->restart_units = units;
			node_restart_id(n->resource_version, n->restart_services, q->restart_id);
			log_fields(LOG_NOTICE, LOG_FIELDS(nf), "restart of %s requested (request %s)", n->restart_services,
				   q->restart_id);
		}
	}
}

bool nodereq_restart_done(const struct nodereq *q, const char *result_restart_id)
{
	return result_restart_id && strcmp(result_restart_id, q->restart_id) == 0;
}

void nodereq_set_restart(struct nodereq *q, char **units, const char *id)
{
	strv_free(q->restart_units);
	q->restart_units = units;
	snprintf(q->restart_id, sizeof(q->restart_id), "%s", id);
}

void nodereq_done(struct nodereq *q)
{
	free(q->key_document);
	free(q->restart_value);
	strv_free(q->restart_units);
	*q = (struct nodereq){};
}
