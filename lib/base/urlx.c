/* URL checks; see urlx.h. Moved out of lib/node/config.c, so that
 * lib/node/gnaconfig.c no longer includes config.h (config.c includes
 * gnaconfig.h: the two included each other). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "urlx.h"

bool urlx_https_is_valid(const char *s)
{
	if (strncmp(s, "https://", 8) != 0)
		return false;
	const char *host = s + 8;
	if (*host == '\0' || *host == '/' || *host == ':')
		return false;
	for (const char *p = host; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= 0x20 || c >= 0x7f || c == '@' || c == '?' || c == '#' || c == '\\')
			return false;
	}
	return true;
}

bool urlx_loopback_is_valid(const char *s)
{
	if (strncmp(s, "http://", 7) != 0)
		return false;
	const char *host = s + 7, *end;
	char addr[INET6_ADDRSTRLEN];
	if (*host == '[') {
		end = strchr(host, ']');
		if (!end || (size_t)(end - host - 1) >= sizeof(addr))
			return false;
		memcpy(addr, host + 1, (size_t)(end - host - 1));
		addr[end - host - 1] = '\0';
		struct in6_addr a6;
		if (inet_pton(AF_INET6, addr, &a6) != 1 || !IN6_IS_ADDR_LOOPBACK(&a6))
			return false;
		end++;
	} else {
		end = host + strcspn(host, ":/");
		if ((size_t)(end - host) >= sizeof(addr))
			return false;
		memcpy(addr, host, (size_t)(end - host));
		addr[end - host] = '\0';
		struct in_addr a4;
		/* inet_pton takes dotted quads only ("127.1" and hex are refused). */
		if (inet_pton(AF_INET, addr, &a4) != 1 || (ntohl(a4.s_addr) >> 24) != 127)
			return false;
	}
	if (*end == ':') {
		const char *p = ++end;
		unsigned long port = 0;
		while (*p >= '0' && *p <= '9' && p - end < 5)
			port = port * 10 + (unsigned long)(*p++ - '0');
		if (p == end || port == 0 || port > 65535)
			return false;
		end = p;
	}
	if (*end != '\0' && *end != '/')
		return false;
	for (const char *p = end; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= 0x20 || c >= 0x7f || c == '@' || c == '?' || c == '#' || c == '\\')
			return false;
	}
	return true;
}
