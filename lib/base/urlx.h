/* Checks of the URLs node-agent's configuration names: pure string checks,
 * no resolver, no allocation. libcurl does the rest of the URL parsing. */
#ifndef NA_URLX_H
#define NA_URLX_H

#include <stdbool.h>

/* True for "https://" followed by a non-empty authority without userinfo,
 * whitespace or control characters (apiServer.server, and the server in
 * gardener-node-agent's configuration). libcurl does the rest of the URL
 * parsing. */
bool urlx_https_is_valid(const char *s);

/* True for "http://" followed by a loopback IP literal (127.0.0.0/8 in
 * dotted quad, or [::1]), an optional ":port" and an optional path without
 * whitespace, control characters, userinfo, query or fragment: the only
 * targets of the health probes. Host names are refused (a resolver or
 * /etc/hosts could point them anywhere). */
bool urlx_loopback_is_valid(const char *s);

#endif
