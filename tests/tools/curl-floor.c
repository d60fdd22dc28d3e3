/* The memory floor that libcurl sets (tests/bench/memory, issue 27): a
 * program linked as node-agent is (the same libraries), that initialises
 * libcurl as node-agent does and makes one HTTPS GET with the same TLS
 * settings (CA file, TLS >= 1.2, HTTP/1.1, https only), keeps the easy
 * handle and its connection, then waits for a signal. Its private memory
 * is what any libcurl client on this Debian pays before doing anything of
 * its own.
 * Usage: curl-floor [URL CAFILE]   (no URL: curl_global_init() only) */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <curl/curl.h>

static size_t drop(char *p, size_t size, size_t n, void *u)
{
	(void)p;
	(void)u;
	return size * n;
}

int main(int argc, char **argv)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "curl-floor: curl_global_init failed\n");
		return 1;
	}
	CURL *e = NULL;
	if (argc >= 3) {
		e = curl_easy_init();
		if (!e)
			return 1;
		curl_easy_setopt(e, CURLOPT_URL, argv[1]);
		curl_easy_setopt(e, CURLOPT_CAINFO, argv[2]);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
		curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
		curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, drop);
		CURLcode c = curl_easy_perform(e);
		if (c != CURLE_OK)
			fprintf(stderr, "curl-floor: %s: %s\n", argv[1], curl_easy_strerror(c));
	}
	printf("ready\n");
	fflush(stdout);
	sigset_t set;
	int sig;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigwait(&set, &sig);
	if (e)
		curl_easy_cleanup(e);
	curl_global_cleanup();
	return 0;
}
