/* The apply result: what cloud-config-exec reports back to node-agent.
 *
 * cloud-config-exec writes <exec state dir>/result.json (root-owned, 0644,
 * atomically) at the end of every run; node-agent reads it and annotates the
 * Node only when "success" is true for the checksum it wrote.
 *
 *   {"version": 1, "checksum": "<hex>", "generation": <uint>,
 *    "success": true|false, "failedStep": "files"|"units"|"keys"|... | absent,
 *    "error": "<one line>" | absent, "changedUnits": ["a.service", ...],
 *    "restartId": "<id of the restart request that was executed>" | absent,
 *    "finishedAt": <unix seconds>}
 *
 * Pure functions: no I/O, no logging. */
#ifndef NA_RESULT_H
#define NA_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RESULT_VERSION 1
#define RESULT_MAX (1u << 20)

struct result {
	char checksum[65];
	uint64_t generation;
	bool success;
	char *failed_step;          /* NULL on success */
	char *error;                /* NULL on success */
	char **changed_units;       /* NULL-terminated, may be NULL */
	char *restart_id;           /* NULL when none */
	time_t finished_at;
};

int result_format(const struct result *r, char **ret, size_t *ret_len);
int result_parse(const char *data, size_t len, struct result *ret, const char **err);
void result_done(struct result *r);

#endif
