/* node-agent's settings: the configuration file (lib/node/config.h) completed
 * from gardener-node-agent's stock user data (stock.h) and checked for what
 * the daemon needs. Used at start, on SIGHUP and by --check-config. */
#ifndef NA_AGENT_SETTINGS_H
#define NA_AGENT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "stock.h"

/* Loads and checks the configuration for the daemon: what config_load()
 * checks plus what the agent needs (server, CA, Secret and Node names, a
 * credential), after filling unset settings from gardener-node-agent's
 * stock user data when gardener.nodeAgentDir names it (stock.h). When path
 * does not exist and the stock directory holds a config-<version>.yaml,
 * the configuration is the defaults with gardener.nodeAgentDir set to it
 * (stock.defaulted; an image needs no node-agent.conf on a Gardener node).
 * With check_files, every credential/CA file must be readable. With
 * stock_ret, the stock data and the origins of the settings are handed
 * over (free with stock_done()). Returns 0, or -errno (config_load()'s, or
 * -EINVAL); logs nothing: err receives the reason. */
int settings_load(const char *path, bool check_files, struct config *ret, struct stock *stock_ret, char *err,
		  size_t errlen);

/* Whether there is any configuration at all: the file at path exists, or
 * the credentials copy in creds_dir (if not NULL) or gna_dir holds
 * gardener-node-agent's config-<version>.yaml. When there is none, why
 * receives the one-line reason, naming both and the example. Used by
 * --config-present (node-agent.service's ExecCondition=) and at start. */
bool settings_present(const char *path, const char *gna_dir, const char *creds_dir, char *why, size_t whylen);

#endif
