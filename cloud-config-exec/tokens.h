/* Token sync, the executor's half: gardener-node-agent's token controller
 * (gardener/gardener pkg/nodeagent/controller/token/reconciler.go) writes
 * each synced Secret's "token" to its path with 0640 when it differs;
 * node-agent fetches the tokens and hands them over in desired.json
 * ("tokens"); cloud-config-exec writes them as root. A file removed on the
 * node is written again on the next run (the timer's, at the latest). */
#ifndef CCE_TOKENS_H
#define CCE_TOKENS_H

#include "desired.h"

/* Writes every token of d below rootfd (parent directories 0755, the file
 * 0640 root:root, atomically, only when its bytes differ). Returns how many
 * files were written, or -errno for the first failure (logged; the others
 * are still tried). */
int tokens_apply(int rootfd, const struct desired *d);

#endif
