/* node-agent's seccomp allow-list (through lib/base/sandbox.h).
 *
 * Installed by agent_run() after the configuration, the state directories,
 * inotify, the signalfd and libcurl are set up and before the first request,
 * so nothing the API server sends is parsed without it. Lists what the
 * daemon needs for the rest of its life: libcurl + OpenSSL over TCP (and
 * libcurl's resolver thread), the journal and sd_notify over AF_UNIX, the
 * token/CA/config re-reads, the atomic write of desired.json, inotify. Any
 * other system call kills the process with SIGSYS; clone3 gets ENOSYS so
 * glibc falls back to clone. */
#ifndef NA_AGENT_FILTER_H
#define NA_AGENT_FILTER_H

/* Returns 0 once loaded, or -errno; *reterr_name names an unknown syscall. */
int filter_install(const char **reterr_name);

#endif
