/* Stock user data: what Gardener's user data leaves for gardener-node-agent
 * in /var/lib/gardener-node-agent, read as node-agent's input.
 *
 * When node-agent.conf names that directory (gardener.nodeAgentDir), or
 * when there is no node-agent.conf and the directory holds a
 * config-<version>.yaml (agent_load_config(): an image needs no config of
 * its own on a Gardener node), the
 * cluster CA, the bootstrap token, the machine name and the newest
 * config-<version>.yaml there fill the settings node-agent.conf leaves
 * unset: an explicit value always wins. The files are root's (0600/0640);
 * node-agent gets them without privileges through systemd's
 * LoadCredential=gardener-node-agent:/var/lib/gardener-node-agent
 * (node-agent.service): under $CREDENTIALS_DIRECTORY the file <rel> of the
 * directory is "gardener-node-agent_<rel with / as _>" (systemd 251+
 * execute.c, load_cred_recurse_dir_cb). Parsing is lib/node/gnaconfig.c. */
#ifndef NA_AGENT_STOCK_H
#define NA_AGENT_STOCK_H

#include <stdio.h>

#include "gnaconfig.h"

/* The credential ID in node-agent.service's LoadCredential=. */
#define STOCK_CREDENTIAL_ID "gardener-node-agent"

struct config;

struct stock {
	char *dir;             /* the directory as on the node; NULL: not used */
	char *creds_dir;       /* $CREDENTIALS_DIRECTORY when the files come from there */
	char *config_path;     /* the config-<version>.yaml read (as found), or NULL */
	bool have_config;
	struct gnaconfig gna;
	char *machine_name;    /* first line of machine-name, checked; NULL if absent */
	char *ca_path;         /* cluster-ca.crt as found, NULL if absent */
	char *bootstrap_token_path; /* credentials/bootstrap-token as found, NULL if absent */
	char *zone;            /* first line of zone, checked; NULL if absent */

	/* Where each merged setting came from (static strings or paths owned
	 * above); NULL: node-agent.conf set it (or nobody did). */
	bool defaulted;        /* no node-agent.conf: gardener.nodeAgentDir by default */
	const char *from_server, *from_ca, *from_secret, *from_version, *from_bootstrap, *from_machine, *from_zone;
};

/* Reads the stock files of dir (from creds_dir when it is not NULL, see
 * above) into *ret. Missing files are fine; a file that cannot be read or
 * does not parse, or a bad machine name, is an error written to err
 * ("<path>: <reason>"). Logs nothing. */
int stock_load(const char *dir, const char *creds_dir, struct stock *ret, char *err, size_t errlen);

/* True when dir (or creds_dir, see above) holds a config-<version>.yaml or
 * config.yaml: this is a Gardener node, and node-agent needs no
 * node-agent.conf of its own. Logs nothing. */
bool stock_present(const char *dir, const char *creds_dir);

/* Fills what c leaves unset from s and records the origins in s:
 * apiServer.server, apiServer.caFile (the config's caFile, mapped to the
 * credential when it lies in the directory, else cluster-ca.crt),
 * osc.secretName, node.kubernetesVersion, node.machineName,
 * apiServer.bootstrapTokenFile.
 * Returns 0 or -ENOMEM. */
int stock_merge(struct stock *s, struct config *c);

/* stock_follow() results: what the caller must act on. */
#define STOCK_NEW_CONNECTION 1 /* apiServer.server or the CA: set the client up again */
#define STOCK_NEW_SECRET 2     /* osc.secretName: follow the other Secret */

/* The CA bundle a newer configuration brings is written here, in the
 * agent's state directory (the stock copy under $CREDENTIALS_DIRECTORY is
 * the one from the service's start). */
#define STOCK_OSC_CA_FILE "gna-cluster-ca.crt"

/* gardener-node-agent's configuration as a newer OSC brings it (g, parsed
 * from the OSC's newest config-<version>.yaml): the settings that stock
 * data provided take its values, those node-agent.conf sets stay:
 * apiServer.server, the CA (apiServer.caBundle is written to
 * state_fd/STOCK_OSC_CA_FILE, state_path naming that directory for
 * libcurl; a caFile in the stock directory maps to its copy as at load),
 * osc.secretName. A setting g does not give stays. Returns the
 * STOCK_NEW_* flags (0: nothing changed) and describes the changes in what
 * ("apiServer.server \"a\" -> \"b\", ..."), or -errno (-ENOMEM, the CA
 * write's error; what then names it). Logs nothing. */
int stock_follow(struct stock *s, struct config *c, const struct gnaconfig *g, int state_fd, const char *state_path,
		 char *what, size_t what_len);

/* --check-config: each setting stock data can provide, its value and where
 * it came from. */
void stock_print(const struct stock *s, const struct config *c, FILE *f);

/* The host paths of the CA and the bootstrap token that the kubelet's
 * bootstrap kubeconfig names (cloud-config-exec writes it, the kubelet reads
 * them; never the credential copies under $CREDENTIALS_DIRECTORY) in
 * gardener.nodeAgentDir. Only with stock user data: the executor deletes
 * the token once the Node is registered, as gardener-node-agent does, which
 * an operator's own apiServer.bootstrapTokenFile must not suffer. false
 * without gardener.nodeAgentDir or apiServer.server, or when a path does not
 * fit. */
bool stock_kubelet_paths(const struct config *c, char *ca, size_t ca_size, char *token, size_t token_size);

/* Reads the stock file rel (e.g. "credentials/kubeconfig") of
 * gardener.nodeAgentDir, from $CREDENTIALS_DIRECTORY when set, into *ret
 * (at most max bytes). -ENOENT when it or gardener.nodeAgentDir is absent. */
int stock_read(const struct config *c, const char *rel, size_t max, char **ret, size_t *ret_len);

void stock_done(struct stock *s);

#endif
