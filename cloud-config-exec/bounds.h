/* What desired.json may ask of root beyond the OSC.
 *
 * node-agent (unprivileged, on the network) writes desired.json; the
 * executor (root) applies it. The OSC inside is re-verified (its checksum)
 * and re-parsed here, but it cannot be authenticated: whoever can forge it
 * is root on the node, with gardener-node-agent as with us. The other fields
 * of desired.json are not part of any OSC, and node-agent fills them from
 * the stock user data and from what the OSC itself configures. So each is
 * bounded by exactly that, and a compromised node-agent gains nothing a
 * forged OSC would not give it anyway:
 *
 *   kubeletBootstrap.tokenFile  only <gna dir>/credentials/bootstrap-token
 *                               (gardener/gardener pkg/apis/config/nodeagent/
 *                               v1alpha1/types.go BootstrapTokenFilePath =
 *                               CredentialsDir + "/bootstrap-token",
 *                               CredentialsDir = BaseDir + "/credentials",
 *                               BaseDir = "/var/lib/gardener-node-agent");
 *                               root reads it and, once the Node is
 *                               registered, deletes it;
 *   kubeletBootstrap.caFile     only <gna dir>/cluster-ca.crt (same file,
 *                               ClusterCAFilePath);
 *   tokens[].path               only a path that the gardener-node-agent
 *                               configuration carried by the OSC being
 *                               applied names in controllers.token.
 *                               syncConfigs[].path (lib/gnaconfig.h; when
 *                               that configuration is malformed, node-agent
 *                               keeps the last good one, so the last
 *                               applied OSC's stands in), and never one
 *                               below the executor's state directory (state,
 *                               KRL, key snapshot), the snapshot's
 *                               directory, a systemd unit directory
 *                               (/etc/systemd, /run/systemd, /usr/lib/systemd,
 *                               /lib/systemd, /usr/local/lib/systemd,
 *                               /usr/local/share/systemd, /usr/share/systemd,
 *                               /etc/xdg/systemd, a home's .config/systemd
 *                               and .local/share/systemd,
 *                               /run/user/<uid>/systemd: every path of
 *                               `systemd-analyze unit-paths`, system, global
 *                               and user) or an account database
 *                               (/etc/passwd, shadow, group, gshadow and
 *                               their "-" backups, subuid, subgid, sudoers,
 *                               sudoers.d), even when the OSC names it;
 *   secretFiles[].path          only a path that the OSC being applied
 *                               names as a content.secretRef file (after the
 *                               node filter): root takes bytes from node-agent
 *                               for exactly the files whose bytes the OSC says
 *                               come from a Secret, and for no other path
 *                               (the file's mode and owner are the OSC's);
 *   readyRegistries[].upstream  only a registry of the OSC's criConfig that
 *                               has readinessProbe: true (a listed one only
 *                               lets its hosts.toml be written now, as the
 *                               OSC says, never another file);
 *   restart.units[]             only valid unit names that can be restarted
 *                               (desired_parse() checks the names; a template
 *                               "a@.service" is no unit and is refused here).
 *
 * <gna dir> is the config's gardener.nodeAgentDir, GNA_DIR_DEFAULT when
 * unset (what node-agent uses on a node without node-agent.conf). */
#ifndef CCE_BOUNDS_H
#define CCE_BOUNDS_H

#include <stddef.h>

#include "desired.h"
#include "osc.h"

#define BOUNDS_ERROR_MAX 1024

struct bounds {
	const char *gna_dir;        /* NULL: GNA_DIR_DEFAULT */
	const char *exec_state_dir; /* absolute, normalised */
	const char *snapshot_path;  /* absolute, normalised; may be NULL */
	const struct osc *osc;      /* the OSC being applied (d->osc, parsed) */
	const struct osc *last;     /* the last applied OSC, may be NULL */
};

/* Checks every field of d beyond the OSC against b as above. Pure: no I/O,
 * no logging. Returns 0, or -EPERM with one line in err naming the field
 * and quoting the value ("tokens[1].path '/etc/passwd': ..."), -ENOMEM. */
int bounds_check(const struct desired *d, const struct bounds *b, char *err, size_t err_size);

/* Is path below (or at) one of the places no token may go, given the
 * executor's state directory and snapshot path (may be NULL)? Returns a
 * static description of the place, or NULL. Pure, for tests. */
const char *bounds_forbidden_place(const char *path, const char *exec_state_dir, const char *snapshot_path);

#endif
