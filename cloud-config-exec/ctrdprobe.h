/* `cloud-config-exec probe-containerd`: asks containerd for its version over
 * its socket, as gardener-node-agent's containerd health check does every
 * 30 s (gardener/gardener pkg/nodeagent/controller/healthcheck/containerd.go:
 * containerdClient.Version(); interval defaultIntervalSeconds in add.go),
 * and writes the verdict to <execStateDir>/containerd-health.json
 * (lib/node/ctrdhealth.h) for node-agent, which has no access to the
 * socket (root's) and decides: Events, and a restart of containerd.service
 * after one minute unhealthy through the desired state (agent/health.h).
 *
 * The check is `ctr --address SOCKET version` (Debian's containerd package),
 * run as a child (child.h) with a deadline: ctr calls the same
 * containerd.services.version.v1.Version/Version gRPC method as Gardener's
 * client, and healthy means it printed a server version. A containerd that
 * is stopped (SIGSTOP: the socket accepts, nothing answers), gone (no
 * socket, connection refused) or answering an error is unhealthy with why.
 *
 * Runs in its own unit (units/cloud-config-exec-containerd-probe.service:
 * root for the socket, no capabilities, no network, only its state
 * directory writable), not in the executor's apply: that runs every 10 min,
 * the probe every 30 s. Logs its verdict when it changes (notice when
 * healthy, warning when not), nothing else at notice or above: the unit's
 * LogLevelMax=notice keeps a healthy node's journal free of a line per run. */
#ifndef CCE_CTRDPROBE_H
#define CCE_CTRDPROBE_H

/* ctr's own deadlines (--connect-timeout: its dial retries a missing
 * socket and waits for a stopped server's handshake; --timeout: the call)
 * and ours around the child: a probe ends within 10 s. */
#define CTRDPROBE_CTR_CONNECT_TIMEOUT "5s"
#define CTRDPROBE_CTR_TIMEOUT "8s"
#define CTRDPROBE_TIMEOUT_MS 10000u

/* Probes address and writes the verdict into the directory state_dir below
 * rootfd (created 0755 if missing). Returns 0 when the verdict was written
 * (healthy or not), -errno when it could not be (logged). */
int ctrdprobe_run(int rootfd, const char *state_dir, const char *address);

#endif
