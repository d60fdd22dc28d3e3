/* node-agent's settings; see settings.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "kube.h"
#include "settings.h"

static int check_readable(const char *what, const char *path, char *err, size_t errlen)
{
	if (!path)
		return 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s \"%s\": %s", what, path, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

bool settings_present(const char *path, const char *gna_dir, const char *creds_dir, char *why, size_t whylen)
{
	/* The credentials copy exists only from ExecStart= on (systemd 252
	 * writes it after ExecCondition=, which runs as root, "+", and reads
	 * the directory itself): either will do. */
	if (access(path, F_OK) == 0 || errno != ENOENT || (creds_dir && stock_present(gna_dir, creds_dir)) ||
	    stock_present(gna_dir, NULL))
		return true;
	snprintf(why, whylen,
		 "no configuration: neither %s nor Gardener's stock user data (%s/config-<version>.yaml) exists; "
		 "write one (example: %s.example); node-agent.path starts the agent when one appears",
		 path, gna_dir, CONFIG_PATH_DEFAULT);
	return false;
}

int settings_load(const char *path, bool check_files, struct config *ret, struct stock *stock_ret, char *err,
		  size_t errlen)
{
	struct config c;
	struct stock stock = {};
	const char *creds = secure_getenv("CREDENTIALS_DIRECTORY");
	char label[PATH_MAX + 64];
	int r = config_load(path, &c, err, errlen);
	if (r == -ENOENT && stock_present(GNA_DIR_DEFAULT, creds)) {
		/* No node-agent.conf on a Gardener node: the stock user data is
		 * the configuration (what gardener-node-agent reads), the rest
		 * takes its defaults. */
		static const char dflt[] = "{\"gardener\": {\"nodeAgentDir\": \"" GNA_DIR_DEFAULT "\"}}";
		char why[256];
		r = config_parse(dflt, sizeof(dflt) - 1, &c, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s: defaults: %s", path, why);
			return r;
		}
		stock.defaulted = true;
		/* Errors from here on name where the settings came from. */
		snprintf(label, sizeof(label), "%s (absent; stock user data in %s)", path, GNA_DIR_DEFAULT);
		path = label;
	}
	if (r < 0)
		return r;
	/* Stock user data fills what the file leaves unset (stock.c). */
	if (c.gna_dir) {
		bool defaulted = stock.defaulted;
		char why[768];
		r = stock_load(c.gna_dir, creds, &stock, why, sizeof(why));
		if (r == 0) {
			stock.defaulted = defaulted;
			r = stock_merge(&stock, &c);
		}
		if (r < 0) {
			snprintf(err, errlen, "%s: gardener.nodeAgentDir: %s", path, r == -ENOMEM ? "out of memory" : why);
			goto fail;
		}
	}
	const char *missing = !c.server		? "apiServer.server"
			      : !c.ca_file	? "apiServer.caFile"
			      : !c.secret_name	? "osc.secretName"
			      : !c.node_name	? "node.name"
						: NULL;
	if (missing) {
		snprintf(err, errlen, "%s: %s: required", path, missing);
		goto fail;
	}
	if (!kube_name_is_valid(c.secret_name) || !kube_name_is_valid(c.secret_namespace) ||
	    !kube_name_is_valid(c.node_name)) {
		const char *key = !kube_name_is_valid(c.secret_name)	  ? "osc.secretName"
				  : !kube_name_is_valid(c.secret_namespace) ? "osc.secretNamespace"
									    : "node.name";
		const char *v = !kube_name_is_valid(c.secret_name)	? c.secret_name
				: !kube_name_is_valid(c.secret_namespace) ? c.secret_namespace
									  : c.node_name;
		/* The value as far as it can be shown: its first 64 bytes,
		 * anything unprintable as '?'. */
		char shown[65];
		size_t n = strlen(v), k;
		for (k = 0; k < n && k < sizeof(shown) - 1; k++)
			shown[k] = v[k] >= 0x20 && v[k] < 0x7f ? v[k] : '?';
		shown[k] = '\0';
		snprintf(err, errlen,
			 "%s: %s: \"%s\"%s (%zu characters) is not a valid Kubernetes name (lowercase letters, digits, "
			 "'-' and '.', alphanumeric at both ends, at most %u characters)",
			 path, key, shown, n > k ? "..." : "", n, (unsigned)KUBE_NAME_MAX);
		goto fail;
	}
	if (!c.token_file && !c.client_cert_file && !c.bootstrap_token_file && !c.machine_name) {
		snprintf(err, errlen,
			 "%s: apiServer: no credential (tokenFile, clientCertificateFile + clientKeyFile, "
			 "bootstrapTokenFile)",
			 path);
		goto fail;
	}
	if (check_files) {
		char why[512];
		if (check_readable("apiServer.caFile", c.ca_file, why, sizeof(why)) < 0 ||
		    check_readable("apiServer.clientCertificateFile", c.client_cert_file, why, sizeof(why)) < 0 ||
		    check_readable("apiServer.clientKeyFile", c.client_key_file, why, sizeof(why)) < 0 ||
		    check_readable("apiServer.bootstrapTokenFile", c.bootstrap_token_file, why, sizeof(why)) < 0 ||
		    /* The token file may appear later when a bootstrap token covers first contact. */
		    (!c.bootstrap_token_file &&
		     check_readable("apiServer.tokenFile", c.token_file, why, sizeof(why)) < 0)) {
			snprintf(err, errlen, "%s: %s", path, why);
			goto fail;
		}
	}
	*ret = c;
	if (stock_ret)
		*stock_ret = stock;
	else
		stock_done(&stock);
	return 0;
fail:
	stock_done(&stock);
	config_done(&c);
	return -EINVAL;
}
