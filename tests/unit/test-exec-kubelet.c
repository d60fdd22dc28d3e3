/* Unit tests for the kubelet bootstrap kubeconfig: desired.json's
 * kubeletBootstrap (round trip, refusals), the token check, the rendering,
 * and the step in a scratch root (written 0600 only when it should be,
 * removed with the token once the Node is registered). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloud-config-exec/kubelet.h"
#include "cleanup.h"
#include "desired.h"
#include "scratch.h"

static void desired_round_trip(void **state)
{
	(void)state;
	struct desired d = { .osc = (char *)(uintptr_t)"spec: {}\n", .osc_len = 9, .generation = 3,
			     .kb_server = (char *)(uintptr_t)"https://api.example.com",
			     .kb_ca_file = (char *)(uintptr_t)"/var/lib/gardener-node-agent/cluster-ca.crt",
			     .kb_token_file = (char *)(uintptr_t)"/var/lib/gardener-node-agent/credentials/bootstrap-token",
			     .kb_node_registered = true };
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	char *doc = NULL;
	assert_int_equal(desired_format(&d, &doc, NULL), 0);
	struct desired p;
	const char *err = NULL;
	assert_int_equal(desired_parse(doc, strlen(doc), &p, &err), 0);
	assert_string_equal(p.kb_server, "https://api.example.com");
	assert_string_equal(p.kb_token_file, "/var/lib/gardener-node-agent/credentials/bootstrap-token");
	assert_true(p.kb_node_registered);
	desired_done(&p);
	free(doc);

	d.kb_server = (char *)(uintptr_t)"http://api";
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);
	d.kb_server = (char *)(uintptr_t)"https://api\"x";
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);
	d.kb_server = (char *)(uintptr_t)"https://api";
	d.kb_ca_file = (char *)(uintptr_t)"relative/ca";
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);
	d.kb_ca_file = NULL;
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);

	char sum[65];
	desired_sha256_hex("x", 1, sum);
	char bad[512];
	snprintf(bad, sizeof(bad),
		 "{\"version\":1,\"checksum\":\"%s\",\"osc\":\"x\",\"generation\":1,"
		 "\"kubeletBootstrap\":{\"server\":\"https://a\",\"caFile\":\"/ca\",\"tokenFile\":\"/t\",\"extra\":1}}",
		 sum);
	assert_int_equal(desired_parse(bad, strlen(bad), &p, &err), -EINVAL);
	assert_string_equal(err, "kubeletBootstrap: unknown or duplicate key");
	snprintf(bad, sizeof(bad),
		 "{\"version\":1,\"checksum\":\"%s\",\"osc\":\"x\",\"generation\":1,"
		 "\"kubeletBootstrap\":{\"server\":\"https://a\",\"caFile\":\"/ca\",\"tokenFile\":\"/t\"}}",
		 sum);
	assert_int_equal(desired_parse(bad, strlen(bad), &p, &err), -EINVAL);
}

static void token_and_render(void **state)
{
	(void)state;
	char *t = NULL;
	assert_int_equal(kubelet_token_parse("abcdef.0123456789abcdef\n", 24, &t), 0);
	assert_string_equal(t, "abcdef.0123456789abcdef");
	free(t);
	assert_int_equal(kubelet_token_parse("<<BOOTSTRAP_TOKEN>>", 19, &t), -EINVAL);
	assert_int_equal(kubelet_token_parse("ABCDEF.0123456789abcdef", 23, &t), -EINVAL);
	assert_int_equal(kubelet_token_parse("abcdef.0123456789abcde\"", 23, &t), -EINVAL);
	assert_int_equal(kubelet_token_parse("abcdef-0123456789abcdef", 23, &t), -EINVAL);
	char *k = NULL;
	assert_int_equal(kubelet_bootstrap_render("https://api", "/ca.crt", "abcdef.0123456789abcdef", &k), 0);
	assert_non_null(strstr(k, "    certificate-authority: \"/ca.crt\"\n    server: \"https://api\"\n"));
	assert_non_null(strstr(k, "- name: kubelet-bootstrap\n  user:\n    token: \"abcdef.0123456789abcdef\"\n"));
	assert_non_null(strstr(k, "current-context: kubelet-bootstrap\n"));
	free(k);
}

static void put(const struct scratch *s, const char *rel, const char *data)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", s->path, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(data, f);
	assert_int_equal(fclose(f), 0);
}

static bool exists(const struct scratch *s, const char *rel)
{
	return faccessat(s->fd, rel, F_OK, 0) == 0;
}

static void step(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(mkdirat(s->fd, "gna", 0700), 0);
	struct desired d = { .kb_server = (char *)(uintptr_t)"https://api", .kb_ca_file = (char *)(uintptr_t)"/gna/ca",
			     .kb_token_file = (char *)(uintptr_t)"/gna/token" };
	/* No token: nothing. */
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	assert_false(exists(s, "var/lib/kubelet/kubeconfig-bootstrap"));
	/* The placeholder: nothing. */
	put(s, "gna/token", "<<BOOTSTRAP_TOKEN>>");
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	assert_false(exists(s, "var/lib/kubelet/kubeconfig-bootstrap"));
	/* A token: written 0600, once. */
	put(s, "gna/token", "abcdef.0123456789abcdef\n");
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 1);
	struct stat st;
	assert_int_equal(fstatat(s->fd, "var/lib/kubelet/kubeconfig-bootstrap", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	/* The kubelet has its own credentials: left alone. */
	assert_int_equal(unlinkat(s->fd, "var/lib/kubelet/kubeconfig-bootstrap", 0), 0);
	put(s, "var/lib/kubelet/kubeconfig-real", "x");
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	assert_false(exists(s, "var/lib/kubelet/kubeconfig-bootstrap"));
	assert_int_equal(unlinkat(s->fd, "var/lib/kubelet/kubeconfig-real", 0), 0);
	assert_int_equal(mkdirat(s->fd, "var/lib/kubelet/pki", 0700), 0);
	put(s, "var/lib/kubelet/pki/kubelet-client-current.pem", "x");
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	assert_false(exists(s, "var/lib/kubelet/kubeconfig-bootstrap"));
	assert_int_equal(unlinkat(s->fd, "var/lib/kubelet/pki/kubelet-client-current.pem", 0), 0);
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 1);
	/* Registered: both go, and again is nothing. */
	d.kb_node_registered = true;
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 1);
	assert_false(exists(s, "var/lib/kubelet/kubeconfig-bootstrap"));
	assert_false(exists(s, "gna/token"));
	assert_int_equal(kubelet_bootstrap_apply(s->fd, &d), 0);
	/* No kubeletBootstrap at all: nothing. */
	assert_int_equal(kubelet_bootstrap_apply(s->fd, NULL), 0);
}

static int setup(void **state)
{
	return scratch_setup(state, "kubelet");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(desired_round_trip),
		cmocka_unit_test(token_and_render),
		cmocka_unit_test_setup_teardown(step, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
