/* node-agent --check-config: loads the configuration as the daemon does
 * (settings.h) and says whether the service can work with it, as the
 * service will see it:
 *
 *  - every effective setting with its source: the configuration file, the
 *    stock user data (with the file), or the default;
 *  - the credential the agent will use (token, client certificate, the CSR
 *    with a client.pem of an earlier run, gardener-node-agent's kubeconfig
 *    or the bootstrap token), and an error when none is usable;
 *  - whether the service user (node-agent.service's User=, node-agent by
 *    default) can read the configuration file and every file it names.
 *    Run as root, that is checked in a child that drops to the user
 *    (initgroups, setgid, setuid: what systemd does for User=); run as
 *    another user, it says it cannot check. Files from the stock user data
 *    are read through systemd's LoadCredential= copy and are not checked
 *    that way; paths the unit hides (ProtectHome=, PrivateTmp=) get a
 *    warning (node-agent run by hand or by a test does not have that view).
 *
 * Prints to stdout; problems go to stderr, one line each. */
#ifndef NA_AGENT_CHECKCONFIG_H
#define NA_AGENT_CHECKCONFIG_H

#include <stdbool.h>
#include <stdio.h>

/* node-agent.service's User= (units/node-agent.sysusers creates it). */
#define CHECKCONFIG_USER_DEFAULT "node-agent"

/* Checks the configuration at path (path_given: named by --config, else
 * the default path) for the service user user. Returns 0 when the service
 * can work with it ("configuration OK" printed), 1 when not. */
int checkconfig_run(const char *path, bool path_given, const char *user);

#endif
