/* Unit tests for lib/kube/csr.c: the key, the request's subject (byte for
 * byte as Go's crypto/x509 writes it, against CSRs made by Go in
 * tests/fixtures/csr/, machine names of 1, 30, 31, 55, 63, 64 and 253
 * characters; one past the limit refused with a reason), the digested
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
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "b64.h"
#include "cleanup.h"
#include "csr.h"
#include "fsx.h"

/* A real machine name (machine-controller-manager's shape, 55 characters:
 * ../shared/notes/gardener-names.md). */
#define MACHINE "shoot--i512345--prod-eu1-workerpool1-z1-7d9f6c8b4-x2k9p"

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
	assert_int_equal(csr_request_pem(k, MACHINE, &pem), 0);
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509_REQ *req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
	assert_non_null(req);
	char subj[512];
	X509_NAME_oneline(X509_REQ_get_subject_name(req), subj, sizeof(subj));
	assert_string_equal(subj, "/O=gardener.cloud:node-agents/CN=" CSR_CN_PREFIX MACHINE);
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


/* ---- Go's CSRs (tests/fixtures/csr/: see its README) -------------------- */

static char *fixture(const char *name, size_t *len)
{
	const char *src = getenv("NA_SRCDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/fixtures/csr/%s", src ? src : ".", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("cannot open fixture %s: %s", path, strerror(errno));
	char *data = NULL;
	assert_int_equal(fsx_read_fd(fd, 1u << 20, &data, len), 0);
	close(fd);
	return data;
}

#define MAX_NAMES 16
struct names {
	size_t n;
	char file[MAX_NAMES][32];
	char machine[MAX_NAMES][CSR_MACHINE_NAME_MAX + 1];
};

/* tests/fixtures/csr/names: "<file> <machine name>" a line. */
static void read_names(struct names *ns)
{
	size_t len;
	_cleanup_free_ char *t = fixture("names", &len);
	ns->n = 0;
	for (char *line = t, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *sp = strchr(line, ' ');
		assert_non_null(sp);
		assert_true(ns->n < MAX_NAMES);
		*sp = '\0';
		snprintf(ns->file[ns->n], sizeof(ns->file[0]), "%s", line);
		snprintf(ns->machine[ns->n], sizeof(ns->machine[0]), "%s", sp + 1);
		ns->n++;
	}
	assert_true(ns->n >= 8);
}

/* The DER of a PEM certification request. */
static unsigned char *req_der(const char *pem, long *len)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	unsigned char *der = NULL;
	char *name = NULL, *header = NULL;
	assert_int_equal(PEM_read_bio(b, &name, &header, &der, len), 1);
	assert_string_equal(name, "CERTIFICATE REQUEST");
	OPENSSL_free(name);
	OPENSSL_free(header);
	BIO_free(b);
	return der;
}

/* The bytes of a request between its header (whose length depends on the
 * signature's) and its signature's BIT STRING: the CertificationRequestInfo
 * and the signature algorithm. Sets *off to where they start. */
static long signed_part(const unsigned char *der, long len, long *off)
{
	const unsigned char *p = der;
	long n;
	int tag, class;
	assert_false(ASN1_get_object(&p, &n, &tag, &class, len) & 0x80); /* the request */
	const unsigned char *info = p;
	assert_false(ASN1_get_object(&p, &n, &tag, &class, len - (p - der)) & 0x80); /* its info */
	p += n;
	assert_false(ASN1_get_object(&p, &n, &tag, &class, len - (p - der)) & 0x80); /* the algorithm */
	assert_int_equal(tag, V_ASN1_SEQUENCE);
	p += n;
	*off = (long)(info - der);
	return (long)(p - info);
}

/* With the key of Go's CSRs, ours are the same bytes up to the signature
 * (ECDSA signatures are randomised), for every length the API allows and
 * for a value that is no PrintableString (UTF8String, as Go falls back). */
static void go_bytes(void **state)
{
	(void)state;
	size_t klen;
	_cleanup_free_ char *key_pem = fixture("key.pem", &klen);
	EVP_PKEY *k = NULL;
	assert_int_equal(csr_key_from_pem(key_pem, klen, &k), 0);
	struct names ns;
	read_names(&ns);
	for (size_t i = 0; i < ns.n; i++) {
		char f[64];
		size_t glen;
		snprintf(f, sizeof(f), "%s.pem", ns.file[i]);
		_cleanup_free_ char *go_pem = fixture(f, &glen);
		char *ours = NULL;
		int r = csr_request_pem(k, ns.machine[i], &ours);
		if (r < 0)
			fail_msg("%s (%zu characters): csr_request_pem %d", ns.file[i], strlen(ns.machine[i]), r);
		long gl, ol;
		unsigned char *g = req_der(go_pem, &gl), *o = req_der(ours, &ol);
		long goff, ooff;
		long gs = signed_part(g, gl, &goff), os = signed_part(o, ol, &ooff);
		if (gs != os || memcmp(g + goff, o + ooff, (size_t)gs) != 0)
			fail_msg("%s: our request differs from Go's before the signature (%ld vs %ld bytes)", ns.file[i],
				 os, gs);
		/* and it verifies, and OpenSSL reads the CN back whole */
		BIO *b = BIO_new_mem_buf(ours, -1);
		X509_REQ *req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
		assert_non_null(req);
		assert_int_equal(X509_REQ_verify(req, k), 1);
		X509_NAME *n = X509_REQ_get_subject_name(req);
		const ASN1_STRING *cn = X509_NAME_ENTRY_get_data(
			X509_NAME_get_entry(n, X509_NAME_get_index_by_NID(n, NID_commonName, -1)));
		assert_int_equal(ASN1_STRING_length(cn), strlen(CSR_CN_PREFIX) + strlen(ns.machine[i]));
		X509_REQ_free(req);
		BIO_free(b);
		OPENSSL_free(g);
		OPENSSL_free(o);
		free(ours);
	}
	EVP_PKEY_free(k);
}

/* The limit: 253 (a Kubernetes object name); past it, empty or with a
 * control byte: one reason naming the name and the limit, never -ENOMEM. */
static void machine_name_limits(void **state)
{
	(void)state;
	EVP_PKEY *k = NULL;
	assert_int_equal(csr_key_new(&k), 0);
	char name[CSR_MACHINE_NAME_MAX + 2];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0'; /* 254 */
	char err[CSR_ERROR_MAX] = "";
	char *out = NULL;
	assert_int_equal(csr_machine_name_check(name, err, sizeof(err)), -ENAMETOOLONG);
	assert_non_null(strstr(err, "is 254 bytes, longer than the 253"));
	assert_non_null(strstr(err, "\"aaaaaaaa"));
	assert_int_equal(csr_request_pem(k, name, &out), -EINVAL);
	assert_int_equal(csr_name(k, name, &out), -EINVAL);
	assert_null(out);
	name[CSR_MACHINE_NAME_MAX] = '\0'; /* 253 */
	assert_int_equal(csr_machine_name_check(name, err, sizeof(err)), 0);
	assert_int_equal(csr_name(k, name, &out), 0);
	free(out);
	assert_int_equal(csr_machine_name_check("", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "machine name: empty");
	assert_int_equal(csr_machine_name_check("m\n1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "control or non-ASCII byte at 1"));
	assert_int_equal(csr_request_pem(k, "", &out), -EINVAL);
	EVP_PKEY_free(k);
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
	/* As kube-controller-manager's signer (Go) writes it: no length limit. */
	if (o)
		X509_NAME_add_entry_by_NID(n, NID_organizationName, V_ASN1_PRINTABLESTRING, (const unsigned char *)o,
					   -1, -1, 0);
	X509_NAME_add_entry_by_NID(n, NID_commonName, V_ASN1_PRINTABLESTRING, (const unsigned char *)cn, -1, -1, 0);
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
	const char *cn = CSR_CN_PREFIX MACHINE;
	static const struct {
		const char *o, *cn;
		int key;   /* 0: ours, 1: another */
		long from, to;
		int issuer; /* 0: ca, 1: other */
		const char *error;
	} cases[] = {
		{ CSR_ORG, NULL, 0, -60, 3600, 0, NULL },
		{ CSR_ORG, NULL, 1, -60, 3600, 0, "not for our key" },
		{ CSR_ORG, CSR_CN_PREFIX "shoot--i512345--prod-eu1-workerpool1-z1-7d9f6c8b4-x2k9q", 0, -60, 3600, 0, "subject CN is" },
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
		int r = csr_cert_check(pem, strlen(pem), k, MACHINE, ca_pem, strlen(ca_pem), now, &info, err, sizeof(err));
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
	assert_int_equal(csr_cert_check(fresh_pem, strlen(fresh_pem), k, MACHINE, ca_pem, strlen(ca_pem), now - 3600,
					&info, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not valid before"));
	assert_non_null(strstr(err, "clock off?"));
	assert_int_equal(info.not_before, 1); /* untouched on failure */
	assert_int_equal(csr_cert_check(ending_pem, strlen(ending_pem), k, MACHINE, ca_pem, strlen(ca_pem), now + 3600,
					&info, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "expired at"));
	assert_non_null(strstr(err, "clock off?"));
	/* The same certificates with the clock right are fine. */
	assert_int_equal(csr_cert_check(fresh_pem, strlen(fresh_pem), k, MACHINE, ca_pem, strlen(ca_pem), now, &info,
					err, sizeof(err)),
			 0);
	assert_int_equal(csr_cert_check(ending_pem, strlen(ending_pem), k, MACHINE, ca_pem, strlen(ca_pem), now, &info,
					err, sizeof(err)),
			 0);
	X509_free(fresh);
	X509_free(ending);
	assert_int_equal(csr_cert_check("x", 1, k, MACHINE, ca_pem, strlen(ca_pem), now, &info, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no PEM certificate");
	X509_free(ca);
	X509_free(other);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(otherk);
	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
}

/* An issued certificate for a machine name of each length is checked whole
 * (the CN compared byte for byte), and one for a longer name refused. */
static void cert_name_lengths(void **state)
{
	(void)state;
	EVP_PKEY *cak = NULL, *k = NULL;
	assert_int_equal(csr_key_new(&cak), 0);
	assert_int_equal(csr_key_new(&k), 0);
	X509 *ca = make_cert(cak, NULL, "test-ca", cak, NULL, -3600, 86400, true);
	_cleanup_free_ char *ca_pem = pem_of(ca);
	struct names ns;
	read_names(&ns);
	for (size_t i = 0; i < ns.n; i++) {
		char cn[CSR_CN_MAX + 2];
		snprintf(cn, sizeof(cn), "%s%s", CSR_CN_PREFIX, ns.machine[i]);
		X509 *x = make_cert(k, CSR_ORG, cn, cak, ca, -60, 3600, false);
		_cleanup_free_ char *pem = pem_of(x);
		struct csr_cert_info info;
		char err[CSR_ERROR_MAX] = "";
		int r = csr_cert_check(pem, strlen(pem), k, ns.machine[i], ca_pem, strlen(ca_pem), time(NULL), &info, err,
				       sizeof(err));
		if (r != 0)
			fail_msg("%s: %d %s", ns.file[i], r, err);
		/* one character more in the certificate: refused */
		snprintf(cn, sizeof(cn), "%s%sx", CSR_CN_PREFIX, ns.machine[i]);
		X509 *y = make_cert(k, CSR_ORG, cn, cak, ca, -60, 3600, false);
		_cleanup_free_ char *ypem = pem_of(y);
		assert_int_equal(csr_cert_check(ypem, strlen(ypem), k, ns.machine[i], ca_pem, strlen(ca_pem), time(NULL),
						&info, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "subject CN is"));
		X509_free(x);
		X509_free(y);
	}
	X509_free(ca);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(name_vector),
		cmocka_unit_test(request_and_json),
		cmocka_unit_test(status_parse),
		cmocka_unit_test(event_parse),
		cmocka_unit_test(cert_checks),
		cmocka_unit_test(cert_name_lengths),
		cmocka_unit_test(go_bytes),
		cmocka_unit_test(machine_name_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
