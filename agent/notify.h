/* The service manager's notification protocol (sd_notify(3)) without
 * libsystemd: node-agent needs only READY=1, STATUS=, WATCHDOG=1,
 * RELOADING=1 and STOPPING=1, and linking libsystemd for them would load it and four
 * compression/crypto libraries into a daemon meant to stay small.
 *
 * notify_open() reads $NOTIFY_SOCKET (a path, or "@name" for the abstract
 * namespace) and opens the datagram socket before the seccomp filter goes
 * on; notify_send() is then a single sendto(). Without $NOTIFY_SOCKET both
 * are no-ops. Never logs. */
#ifndef NA_AGENT_NOTIFY_H
#define NA_AGENT_NOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

struct notify {
	int fd;                     /* -1: no service manager to tell */
	struct sockaddr_un addr;
	socklen_t addr_len;
};

/* Returns 0 (also when there is no $NOTIFY_SOCKET) or -errno for a socket
 * address that does not fit or a socket that cannot be made. */
int notify_open(struct notify *n);

/* Sends one datagram of "KEY=value" lines. Returns 0, or -errno. */
int notify_send(const struct notify *n, const char *msg);

/* A reload starts (SIGHUP, systemctl reload): "RELOADING=1" with
 * MONOTONIC_USEC= (CLOCK_MONOTONIC now, as systemd's Type=notify-reload
 * asks for); the service manager counts the reload as done at the next
 * READY=1. Returns 0, or -errno. */
int notify_reloading(const struct notify *n);

void notify_close(struct notify *n);

/* The watchdog interval in microseconds from $WATCHDOG_USEC when it is meant
 * for this process ($WATCHDOG_PID unset or ours), else 0. */
uint64_t notify_watchdog_usec(void);

#endif
