/* node-agent's state machine and event loop.
 *
 * One thread, one poll loop (curl_multi_poll) over the two watch streams and
 * one-shot requests, an inotify fd on the executor's state directory, and a
 * signalfd; timers are deadlines folded into the poll timeout. Nothing in
 * the steady state wakes up except for network input, a result file, a
 * signal, the resync interval and the systemd watchdog. */
#ifndef NA_AGENT_AGENT_H
#define NA_AGENT_AGENT_H

#include <stdbool.h>

enum {
	AGENT_EXIT_OK = 0,
	AGENT_EXIT_APPLY = 1,   /* --once: the apply failed or timed out */
	AGENT_EXIT_CONFIG = 2,  /* configuration error */
	AGENT_EXIT_API = 3,     /* --once: API server or network failure */
	/* No configuration at all: neither the config file nor Gardener's
	 * stock user data. node-agent.service does not restart on it
	 * (RestartPreventExitStatus=); node-agent.path starts it when one
	 * appears. EX_CONFIG of sysexits.h, which systemd prints as "CONFIG". */
	AGENT_EXIT_NOCONFIG = 78,
};

struct agent_options {
	const char *config_path;
	const char *root;       /* prefix of paths.* (NULL: "/") */
	bool once;
	bool check_config;
	bool no_sandbox;        /* --no-sandbox: debugging under strace/valgrind (node-agent(8)) */
};

/* Runs the daemon (or one reconcile with o->once); returns an AGENT_EXIT_*
 * code. Logs every decision. */
int agent_run(const struct agent_options *o);

#endif
