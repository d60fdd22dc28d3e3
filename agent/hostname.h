/* The hostname duty: follows the host's name while the agent runs, so a node
 * whose hostname changes after the start (the AWS kubelet unit runs
 * `hostnamectl set-hostname $(hostname -f)` in its ExecStartPre) still finds
 * its Node by the kubernetes.io/hostname label.
 *
 * gardener-node-agent checks the hostname every 30 s and, when it changed,
 * cancels its context so that systemd restarts it and it reads the hostname
 * again (gardener/gardener pkg/nodeagent/controller/hostnamecheck/
 * reconciler.go, add.go; PR #9280). node-agent does not exit: the owner
 * takes the change (hostname_take_change()) and starts the Node's duties
 * again under the new name (agent.c follow_hostname()).
 *
 * How the change is seen: the kernel wakes poll() on /proc/sys/kernel/
 * hostname with POLLERR|POLLPRI after every sethostname(2)
 * (kernel/utsname_sysctl.c uts_proc_notify(); measured on 6.18 in a private
 * UTS namespace: one wake-up per change, none after), so where that file is
 * visible the duty is event-driven and never wakes up otherwise. The unit
 * has ProcSubset=pid, which hides /proc/sys: there the duty reads uname(2)
 * every HOSTNAME_CHECK_MS, gardener-node-agent's period. Both read the name
 * with uname(2) (no file, no privilege); the wake-up is global (any UTS
 * namespace's change), so a wake-up that brings no new name is ignored.
 *
 * The unit no longer has ProtectHostname=yes: that gave the agent its own
 * UTS namespace, frozen at the start, so a later change was invisible. What
 * it guarded (the agent setting the hostname) stays denied: sethostname(2)
 * and setdomainname(2) are in systemd's @privileged set, which the unit
 * denies, are missing from the agent's own seccomp allow-list
 * (agent/filter.c), and need CAP_SYS_ADMIN, which the unit never grants. */
#ifndef NA_AGENT_HOSTNAME_H
#define NA_AGENT_HOSTNAME_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define HOSTNAME_CHECK_MS 30000u  /* hostnamecheck/reconciler.go: RequeueAfter 30 s */
#define HOSTNAME_PROC_PATH "/proc/sys/kernel/hostname"

struct hostname {
	char name[HOST_NAME_MAX + 1];     /* lowercased, as followed now ("": unknown) */
	char previous[HOST_NAME_MAX + 1]; /* before the change not yet taken */
	bool changed;                     /* a change the owner has not taken */
	int fd;                           /* HOSTNAME_PROC_PATH for poll(); -1: the timer */
	bool woken;                       /* the fd signalled: read at the next tick */
	uint64_t next_at;                 /* the timer's next read (fd < 0) */
	/* Reads the raw hostname into buf (NUL-terminated); returns 0 or
	 * -errno. hostname_init() sets uname(2)'s; tests replace it. */
	int (*get)(char *buf, size_t size);
};

/* Lowercases s in place, as the kubelet's label and the default node name
 * hold it (gardener pkg/nodeagent GetHostName: strings.ToLower). */
void hostname_normalize(char *s);

/* Reads the name now and opens HOSTNAME_PROC_PATH when watch (logs at debug
 * level which way the name is followed). h->get may be set before (tests);
 * otherwise uname(2)'s is used. Returns 0, or -errno when the name cannot be
 * read at all (logged; the duty then retries on its timer). */
int hostname_init(struct hostname *h, bool watch, uint64_t now);
void hostname_done(struct hostname *h);

/* The descriptor to poll for POLLPRI (-1: none); hostname_wake() when it
 * signalled. */
int hostname_fd(const struct hostname *h);
void hostname_wake(struct hostname *h);

/* Reads the name when woken or (without the fd) when due; a new name sets
 * h->changed (logged by the owner). Returns the next deadline (UINT64_MAX:
 * none). */
uint64_t hostname_tick(struct hostname *h, uint64_t now);

/* A change not yet taken: copies the name before it to previous and returns
 * true (h->name is the new one); false when there is none. */
bool hostname_take_change(struct hostname *h, char previous[static HOST_NAME_MAX + 1]);

#endif
