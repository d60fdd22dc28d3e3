/* What the Node asks of this node through its annotations: the restart
 * request (worker.gardener.cloud/restart-systemd-services, parsed by
 * node_parse_restart()) and, when enabled, the key document
 * (node-agent.gardener.cloud/authorized-keys). Both go into the desired
 * state (agent.c); the request stays in force until another one replaces
 * it, the executor's result reports it carried out (the Node patch then
 * removes the annotation, annotate.h), or a repair of the health duty
 * takes its place. */
#ifndef NA_AGENT_NODEREQ_H
#define NA_AGENT_NODEREQ_H

#include <stdbool.h>

#include "kube.h"
#include "node.h"

struct nodereq {
	char *key_document;         /* from the annotation, or NULL */
	char *restart_value;        /* the restart annotation's value last seen, or NULL */
	bool restart_invalid;       /* that value cannot be executed */
	/* The restart request handed to the executor (NULL: none). */
	char **restart_units;
	char restart_id[NODE_RESTART_ID_MAX];
};

/* Takes the annotations of the Node n (as the watch shows it; nf is the
 * NODE= journal field): the key document when keys is set and it changed
 * (one larger than DESIRED_KEY_DOCUMENT_MAX is ignored), and a restart
 * request when its value changed (the same value after a removal is a new
 * request). Logs each change once. */
void nodereq_update(struct nodereq *q, const struct kube_node *n, bool keys, const char *nf);

/* Does result_restart_id (the executor's result, NULL: none) report the
 * request in force as carried out? */
bool nodereq_restart_done(const struct nodereq *q, const char *result_restart_id);

/* Puts units (owned from here on, NULL-terminated) in force under id (cut
 * to NODE_RESTART_ID_MAX - 1 bytes). */
void nodereq_set_restart(struct nodereq *q, char **units, const char *id);

/* Frees what q owns. */
void nodereq_done(struct nodereq *q);

#endif
