/* The executor's seccomp allow-list (lib/base/sandbox.h) plus a second filter
 * that restricts socket() to AF_UNIX: the system bus and the journal. An
 * Internet socket kills the process with SIGSYS; AF_NETLINK (useradd's audit
 * messages) is answered with EAFNOSUPPORT, which useradd tolerates. The
 * filters are inherited by useradd(8), so the list covers what it needs. */
#ifndef CCE_CONFINE_H
#define CCE_CONFINE_H

/* Installs both filters. Returns 0 or -errno (logged). */
int confine_install(void);

#endif
