/* What node-agent publishes on and reads from its own Node, as pure helpers
 * for agent.c: the SSH host public keys, and the restart request carried by
 * the annotation worker.gardener.cloud/restart-systemd-services. */
#ifndef NA_AGENT_NODE_H
#define NA_AGENT_NODE_H

#include <stddef.h>

#define NODE_RESTART_ID_MAX 96

/* Reads <root>/etc/ssh/ssh_host_{ed25519,ecdsa,rsa}_key.pub below root_fd
 * (never following a symlink), validates each with keys_parse_public() and
 * returns "type base64" lines joined by "\n" (comments dropped: they name
 * the host's admin, not the key) in *ret, or NULL when there is none.
 * Unreadable or invalid files are skipped; *ret_skipped counts them. */
int node_read_host_keys(int root_fd, unsigned rsa_min_bits, char **ret, unsigned *ret_skipped);

/* Splits the annotation value ("kubelet,containerd.service") into unit names,
 * appending ".service" where the name is not a valid unit name by itself,
 * each validated with osc_unit_name_is_valid(); blanks around items and
 * empty items are skipped, duplicates dropped. On success *ret is a
 * NULL-terminated array (at least one entry, owned by the caller). Fails
 * with -ENODATA for an empty list, -EINVAL for an invalid item (copied into
 * bad, badlen bytes), -E2BIG past DESIRED_RESTART_UNITS_MAX units. */
int node_parse_restart(const char *value, char ***ret, char *bad, size_t badlen);

/* An identifier of one restart request: the Node's resourceVersion when it
 * was first seen with this value, and a hash of the value. */
void node_restart_id(const char *rv, const char *value, char out[static NODE_RESTART_ID_MAX]);

#endif
