/* Unit tests for lib/kube/csr.c: the key, the request's subject, the digested
 * name (vector computed independently with Python's hashlib), the CSR JSON,
 * status parsing (pending, approved, issued, denied, failed, bad input) and
 * the checks of an issued certificate: right one, another key, another CN,
 * another O, expired, not yet valid, another CA; the renewal point. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "b64.h"
#include "cleanup.h"
#include "csr.h"

static const char fixed_key[] = "-----BEGIN PRIVATE KEY-----\n"
				"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzSJW8T4lTuuZQ8Lx\n"
				"4s0IjZVnrhRzmKEAc0GxFl2ghmyhRANCAAQQeMtHEOGtOcbbptzJWMCUdYZIbn4z\n"
				"MwrYrZZ+lllht8a6ANrDNW+AOL96Y/6NbHUbelcJDEtUUPgxZrY5CPMW\n"
				"-----END PRIVATE KEY-----\n";

static void name_vector(void **state)
{
	(void)state;
	EVP_PKEY *k = NULL;
	assert_int_equal(csr_key_from_pem(fixed_key, strlen(fixed_key), &k), 0);
	char *name = NULL;
	assert_int_equal(csr_name(k, "machine-1", &name), 0);
	assert_string_equal(name, "node-agent-csr-nUyVyi_jgMZM0eVxaBpT88nP8yhu2othIyV9CejgyC0");
	free(name);
	EVP_PKEY_free(k);
	assert_int_equal(csr_key_from_pem("junk", 4, &k), -EINVAL);
}

static void request_and_json(void **state)
{
	(void)state;
	EVP_PKEY *k = NULL;
	assert_int_equal(csr_key_new(&k), 0);
	char *pem = NULL, *kp = NULL, *json = NULL;
	assert_int_equal(csr_key_to_pem(k, &kp), 0);
	EVP_PKEY *k2 = NULL;
	assert_int_equal(csr_key_from_pem(kp, strlen(kp), &k2), 0);
	assert_int_equal(EVP_PKEY_eq(k, k2), 1);
	assert_int_equal(csr_request_pem(k, "m-1", &pem), 0);
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509_REQ *req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
	assert_non_null(req);
	char subj[256];
	X509_NAME_oneline(X509_REQ_get_subject_name(req), subj, sizeof(subj));
	assert_string_equal(subj, "/O=gardener.cloud:node-agents/CN=gardener.cloud:node-agent:machine:m-1");
	assert_int_equal(X509_REQ_verify(req, k), 1);
	X509_REQ_free(req);
	BIO_free(b);

	assert_int_equal(csr_object_json("node-agent-csr-x", pem, &json), 0);
	cJSON *o = cJSON_Parse(json);
	cJSON *spec = cJSON_GetObjectItem(o, "spec");
	assert_string_equal(cJSON_GetObjectItem(o, "apiVersion")->valuestring, "certificates.k8s.io/v1");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name")->valuestring,
			    "node-agent-csr-x");
	assert_string_equal(cJSON_GetObjectItem(spec, "signerName")->valuestring, "kubernetes.io/kube-apiserver-client");
	assert_int_equal(cJSON_GetObjectItem(spec, "expirationSeconds")->valueint, 2592000);
	cJSON *u = cJSON_GetObjectItem(spec, "usages");
	assert_int_equal(cJSON_GetArraySize(u), 3);
	assert_string_equal(cJSON_GetArrayItem(u, 0)->valuestring, "digital signature");
	assert_string_equal(cJSON_GetArrayItem(u, 1)->valuestring, "key encipherment");
	assert_string_equal(cJSON_GetArrayItem(u, 2)->valuestring, "client auth");
	unsigned char *dec = NULL;
	size_t dl = 0;
	const char *r64 = cJSON_GetObjectItem(spec, "request")->valuestring;
	assert_int_equal(b64_decode(r64, strlen(r64), 1 << 16, 0, &dec, &dl), 0);
	assert_memory_equal(dec, pem, strlen(pem));
	free(dec);
	cJSON_Delete(o);
	free(json);
	free(pem);
	OPENSSL_clear_free(kp, strlen(kp));
	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
}

static void status_parse(void **state)
{
	(void)state;
	struct csr_status s;
	char err[CSR_ERROR_MAX];
#define P(j) csr_status_parse(j, strlen(j), &s, err, sizeof(err))
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"metadata\":{\"uid\":\"u1\"}}"), 0);
	assert_int_equal(s.state, CSR_PENDING);
	assert_string_equal(s.uid, "u1");
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":[{\"type\":\"Approved\"}]}}"), 0);
	assert_int_equal(s.state, CSR_APPROVED);
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":[{\"type\":\"Approved\"}],"
			   "\"certificate\":\"aGVsbG8=\"}}"),
			 0);
	assert_int_equal(s.state, CSR_ISSUED);
	assert_int_equal(s.certificate_len, 5);
	csr_status_done(&s);
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":[{\"type\":\"Approved\"},"
			   "{\"type\":\"Denied\",\"reason\":\"NoMachine\",\"message\":\"no \\u001b machine\"}]}}"),
			 0);
	assert_int_equal(s.state, CSR_DENIED);
	assert_string_equal(s.reason, "NoMachine");
	assert_string_equal(s.message, "no ? machine");
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":[{\"type\":\"Failed\","
			   "\"reason\":\"SignerError\"}]}}"),
			 0);
	assert_int_equal(s.state, CSR_FAILED);
	assert_int_equal(P("[]"), -EINVAL);
	assert_int_equal(P("{\"kind\":\"Secret\"}"), -EINVAL);
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":{}}}"), -EINVAL);
	assert_int_equal(P("{\"kind\":\"CertificateSigningRequest\",\"status\":{\"conditions\":[{\"type\":\"Approved\"}],"
			   "\"certificate\":\"!!\"}}"),
			 -EINVAL);
#undef P
}

static void event_parse(void **state)
{
	(void)state;
	struct csr_status s;
	enum csr_event_type t;
	char err[CSR_ERROR_MAX];
#define E(j) csr_event_parse(j, strlen(j), &t, &s, err, sizeof(err))
	assert_int_equal(E("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"CertificateSigningRequest\","
			   "\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"42\"},\"status\":{\"conditions\":"
			   "[{\"type\":\"Approved\"}],\"certificate\":\"aGVsbG8=\"}}}"),
			 0);
	assert_int_equal(t, CSR_EVENT_MODIFIED);
	assert_int_equal(s.state, CSR_ISSUED);
	assert_string_equal(s.uid, "u1");
	assert_string_equal(s.resource_version, "42");
	csr_status_done(&s);
	assert_int_equal(E("{\"type\":\"ADDED\",\"object\":{\"kind\":\"CertificateSigningRequest\","
			   "\"metadata\":{\"resourceVersion\":\"4&x=1\"}}}"),
			 0);
	assert_int_equal(t, CSR_EVENT_ADDED);
	assert_int_equal(s.state, CSR_PENDING);
	assert_string_equal(s.resource_version, ""); /* not usable in a query */
	assert_int_equal(E("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
			   "\"message\":\"too old resource version\"}}"),
			 0);
	assert_int_equal(t, CSR_EVENT_ERROR);
	assert_string_equal(s.message, "too old resource version");
	assert_int_equal(E("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"CertificateSigningRequest\","
			   "\"metadata\":{\"resourceVersion\":\"7\"}}}"),
			 0);
	assert_int_equal(t, CSR_EVENT_BOOKMARK);
	assert_int_equal(E("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Secret\"}}"), -EINVAL);
	assert_int_equal(E("{\"type\":\"RENAMED\",\"object\":{}}"), -EINVAL);
	assert_int_equal(E("{\"type\":\"ADDED\",\"object\":[]}"), -EINVAL);
	assert_int_equal(E("{\"type\":1,\"object\":{}}"), -EINVAL);
	assert_int_equal(E("[]"), -EINVAL);
#undef E
}

/* ---- a test CA ---------------------------------------------------------- */

static X509 *make_cert(EVP_PKEY *subject_key, const char *o, const char *cn, EVP_PKEY *issuer_key, X509 *issuer,
		       long from, long to, bool ca)
{
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), random());
	X509_gmtime_adj(X509_getm_notBefore(x), from);
	X509_gmtime_adj(X509_getm_notAfter(x), to);
	X509_set_pubkey(x, subject_key);
	X509_NAME *n = X509_get_subject_name(x);
	if (o)
		X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o, -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	if (!ca) {
		e = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, "clientAuth");
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	assert_true(X509_sign(x, issuer_key, EVP_sha256()) > 0);
	return x;
}

static char *pem_of(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(b, x);
	char *d;
	long n = BIO_get_mem_data(b, &d);
	char *s = strndup(d, (size_t)n);
	BIO_free(b);
	return s;
}

static void cert_checks(void **state)
{
	(void)state;
	EVP_PKEY *cak = NULL, *otherk = NULL, *k = NULL, *k2 = NULL;
	assert_int_equal(csr_key_new(&cak), 0);
	assert_int_equal(csr_key_new(&otherk), 0);
	assert_int_equal(csr_key_new(&k), 0);
	assert_int_equal(csr_key_new(&k2), 0);
	X509 *ca = make_cert(cak, NULL, "test-ca", cak, NULL, -3600, 86400, true);
	X509 *other = make_cert(otherk, NULL, "other-ca", otherk, NULL, -3600, 86400, true);
	_cleanup_free_ char *ca_pem = pem_of(ca);
	time_t now = time(NULL);
	const char *cn = "gardener.cloud:node-agent:machine:m-1";
	static const struct {
		const char *o, *cn;
		int key;   /* 0: ours, 1: another */
		long from, to;
		int issuer; /* 0: ca, 1: other */
		const char *error;
	} cases[] = {
		{ CSR_ORG, NULL, 0, -60, 3600, 0, NULL },
		{ CSR_ORG, NULL, 1, -60, 3600, 0, "not for our key" },
		{ CSR_ORG, "gardener.cloud:node-agent:machine:m-2", 0, -60, 3600, 0, "subject CN is" },
		{ "system:nodes", NULL, 0, -60, 3600, 0, "subject O is not" },
		{ NULL, NULL, 0, -60, 3600, 0, "subject O is not" },
		{ CSR_ORG, NULL, 0, -7200, -3600, 0, "expired" },
		{ CSR_ORG, NULL, 0, 3600, 7200, 0, "not valid before" },
		{ CSR_ORG, NULL, 0, -60, 3600, 1, "does not chain to the cluster CA" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		X509 *x = make_cert(cases[i].key ? k2 : k, cases[i].o, cases[i].cn ? cases[i].cn : cn,
				    cases[i].issuer ? otherk : cak, cases[i].issuer ? other : ca, cases[i].from,
				    cases[i].to, false);
		char *pem = pem_of(x);
		struct csr_cert_info info = { 0 };
		char err[CSR_ERROR_MAX] = "";
		int r = csr_cert_check(pem, strlen(pem), k, "m-1", ca_pem, strlen(ca_pem), now, &info, err, sizeof(err));
		if (cases[i].error ? (r != -EINVAL || !strstr(err, cases[i].error)) : r != 0)
			fail_msg("case %zu: r=%d err=\"%s\", want \"%s\"", i, r, err,
				 cases[i].error ? cases[i].error : "success");
		if (!cases[i].error) {
			assert_true(info.not_after - info.not_before >= 3600);
			time_t at = csr_renew_at(&info, 0.0);
			assert_int_equal(at, info.not_before + (time_t)(0.8 * (double)(info.not_after - info.not_before)));
			time_t at2 = csr_renew_at(&info, 0.999);
			assert_true(at2 > at && at2 <= info.not_before + (time_t)(0.88 * (double)(info.not_after - info.not_before)));
		}
		free(pem);
		X509_free(x);
	}
	/* The clock one hour off: a certificate issued just now (valid for 30
	 * days) seen by a node whose clock is an hour behind, and one that
	 * ends within the hour seen by a node an hour ahead. One clear reason
	 * each, naming the clock where it can be the cause. */
	X509 *fresh = make_cert(k, CSR_ORG, cn, cak, ca, -60, 30L * 86400, false);
	X509 *ending = make_cert(k, CSR_ORG, cn, cak, ca, -86400, 1800, false);
	_cleanup_free_ char *fresh_pem = pem_of(fresh), *ending_pem = pem_of(ending);
	char err[CSR_ERROR_MAX];
	struct csr_cert_info info = { .not_before = 1 };
	assert_int_equal(csr_cert_check(fresh_pem, strlen(fresh_pem), k, "m-1", ca_pem, strlen(ca_pem), now - 3600,
					&info, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not valid before"));
	assert_non_null(strstr(err, "clock off?"));
	assert_int_equal(info.not_before, 1); /* untouched on failure */
	assert_int_equal(csr_cert_check(ending_pem, strlen(ending_pem), k, "m-1", ca_pem, strlen(ca_pem), now + 3600,
					&info, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "expired at"));
	assert_non_null(strstr(err, "clock off?"));
	/* The same certificates with the clock right are fine. */
	assert_int_equal(csr_cert_check(fresh_pem, strlen(fresh_pem), k, "m-1", ca_pem, strlen(ca_pem), now, &info,
					err, sizeof(err)),
			 0);
	assert_int_equal(csr_cert_check(ending_pem, strlen(ending_pem), k, "m-1", ca_pem, strlen(ca_pem), now, &info,
					err, sizeof(err)),
			 0);
	X509_free(fresh);
	X509_free(ending);
	assert_int_equal(csr_cert_check("x", 1, k, "m-1", ca_pem, strlen(ca_pem), now, &info, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no PEM certificate");
	X509_free(ca);
	X509_free(other);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(otherk);
	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(name_vector),
		cmocka_unit_test(request_and_json),
		cmocka_unit_test(status_parse),
		cmocka_unit_test(event_parse),
		cmocka_unit_test(cert_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
