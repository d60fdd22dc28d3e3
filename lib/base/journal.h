/* A minimal client for the journal's native protocol, without libsystemd.
 *
 * authkeys-cmd runs twice per ssh login and is linked statically; loading
 * libsystemd.so alone costs about 0.5 ms per exec on the reference machine,
 * more than the whole lookup. The native protocol (systemd's
 * docs/JOURNAL_NATIVE_PROTOCOL.md) is a stable, documented datagram format,
 * so this is all it takes to log structured fields: one datagram per entry
 * on /run/systemd/journal/socket, "KEY=value\n" per field, and the
 * length-prefixed binary form for values that contain a newline.
 *
 * Unlike sd_journal_sendv() this never blocks (MSG_DONTWAIT: a congested
 * journal drops the entry rather than delay sshd) and has no memfd fallback
 * for entries larger than a datagram (-EMSGSIZE). No logging, no global
 * state: the caller owns the socket. */
#ifndef NA_JOURNAL_H
#define NA_JOURNAL_H

#include <stddef.h>
#include <sys/uio.h>

#define JOURNAL_SOCKET_PATH "/run/systemd/journal/socket"

/* Returns a new AF_UNIX datagram socket (O_CLOEXEC) to send entries on, or
 * -errno. It is not connected: the journal may start later. */
int journal_open(void);

/* Sends one entry made of n fields, each "KEY=value" (KEY: upper-case
 * letters, digits and '_', not starting with '_'). Returns 0, -EINVAL for a
 * malformed field, -EMSGSIZE, or sendmsg()'s -errno (-ENOENT/-ECONNREFUSED
 * without a journal, -EAGAIN when it is congested). */
int journal_sendv(int fd, const struct iovec *fields, size_t n);

/* The same, to the datagram socket bound at path instead of the journal's
 * (tests). */
int journal_sendv_to(int fd, const char *path, const struct iovec *fields, size_t n);

#endif
