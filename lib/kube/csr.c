/* Client certificates through the CSR API; see csr.h. OpenSSL errors are
 * translated here: -ENOMEM when OpenSSL fails to make something, -EINVAL
 * for input that is not what the contract says. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "b64.h"
#include "cleanup.h"
#include "csr.h"
#include "errbuf.h"

static const char *const usages[] = { "digital signature", "key encipherment", "client auth" };

DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free_all)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_REQ *, X509_REQ_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE *, X509_STORE_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE_CTX *, X509_STORE_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete)

static void sk_X509_pop_freep(STACK_OF(X509) **s)
{
	if (*s)
		sk_X509_pop_free(*s, X509_free);
}

/* errbuf_set(), and OpenSSL's error queue emptied after the message used it. */
#define fail(err, errlen, r, ...)                                      \
	({                                                             \
		int fail_r_ = errbuf_set(err, errlen, r, __VA_ARGS__); \
		ERR_clear_error();                                     \
		fail_r_;                                               \
	})

/* The contents of a memory BIO as a new string. */
static int bio_to_string(BIO *b, char **ret)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	if (n < 0)
		return -ENOMEM;
	char *s = strndup(data, (size_t)n);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int csr_key_new(EVP_PKEY **ret)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	if (!k) {
		ERR_clear_error();
		return -ENOMEM;
	}
	*ret = k;
	return 0;
}

int csr_key_to_pem(EVP_PKEY *key, char **ret)
{
	_cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_secmem());
	if (!b || !PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)) {
		ERR_clear_error();
		return -ENOMEM;
	}
	return bio_to_string(b, ret);
}

static bool key_is_p256(EVP_PKEY *k)
{
	char group[32];
	size_t n = 0;
	return EVP_PKEY_get_base_id(k) == EVP_PKEY_EC &&
	       EVP_PKEY_get_utf8_string_param(k, "group", group, sizeof(group), &n) == 1 &&
	       strcmp(group, "prime256v1") == 0;
}

int csr_key_from_pem(const char *pem, size_t len, EVP_PKEY **ret)
{
	if (len > INT32_MAX)
		return -EINVAL;
	_cleanup_(BIO_free_allp) BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return -ENOMEM;
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	ERR_clear_error();
	if (!k)
		return -EINVAL;
	if (!key_is_p256(k)) {
		EVP_PKEY_free(k);
		return -EINVAL;
	}
	*ret = k;
	return 0;
}

int csr_machine_name_check(const char *machine_name, char *err, size_t errlen)
{
	size_t n = machine_name ? strlen(machine_name) : 0;
	if (n == 0)
		return errbuf_set(err, errlen, -EINVAL, "machine name: empty");
	if (n > CSR_MACHINE_NAME_MAX)
		return errbuf_set(err, errlen, -ENAMETOOLONG,
				  "machine name \"%.64s...\" is %zu bytes, longer than the %u of a Kubernetes "
				  "object name (a DNS subdomain)",
				  machine_name, n, CSR_MACHINE_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if (machine_name[i] < 0x20 || machine_name[i] > 0x7e)
			return errbuf_set(err, errlen, -EINVAL,
					  "machine name \"%.64s\": control or non-ASCII byte at %zu", machine_name, i);
	return 0;
}

/* CSR_CN_PREFIX + machine_name into buf (CSR_CN_MAX + 1 bytes). */
static int subject_cn(const char *machine_name, char *buf, size_t size)
{
	if (csr_machine_name_check(machine_name, NULL, 0) < 0)
		return -EINVAL;
	int n = snprintf(buf, size, "%s%s", CSR_CN_PREFIX, machine_name);
	return n < 0 || (size_t)n >= size ? -EINVAL : 0;
}

/* The string type Go's encoding/asn1 gives a string without an explicit
 * type (marshal.go makeField, isPrintable with '*' and '&' rejected):
 * PrintableString when every byte is in its set, UTF8String otherwise.
 * crypto/x509 writes pkix.Name's values that way, so a machine name (a DNS
 * subdomain: [a-z0-9.-]) makes a PrintableString CN and O. */
static int go_string_type(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char b = *p;
		bool printable = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
				 (b >= '\'' && b <= ')') || (b >= '+' && b <= '/') || b == ' ' || b == ':' ||
				 b == '=' || b == '?';
		if (!printable)
			return V_ASN1_UTF8STRING;
	}
	return V_ASN1_PRINTABLESTRING;
}

/* One RDN of one attribute, the value's bytes as they are with Go's string
 * type. Not X509_NAME_add_entry_by_txt() with MBSTRING_*: that applies
 * X.520's upper bounds (ub-common-name 64, RFC 5280 appendix A), which Go,
 * the kube-apiserver and Gardener's authorizer do not, and a real machine
 * name makes the CN 75-95 characters long (and up to 287). */
static bool add_entry(X509_NAME *name, int nid, const char *value)
{
	return X509_NAME_add_entry_by_NID(name, nid, go_string_type(value), (const unsigned char *)value,
					  (int)strlen(value), -1, 0) == 1;
}

int csr_request_pem(EVP_PKEY *key, const char *machine_name, char **ret)
{
	char cn[CSR_CN_MAX + 1];
	if (subject_cn(machine_name, cn, sizeof(cn)) < 0)
		return -EINVAL;
	_cleanup_(X509_REQ_freep) X509_REQ *req = X509_REQ_new();
	if (!req)
		return -ENOMEM;
	X509_NAME *name = X509_REQ_get_subject_name(req);
	_cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_mem());
	/* Go's pkix.Name puts O before CN (crypto/x509/pkix ToRDNSequence),
	 * each in its own RDN; no attributes (an empty [0] set), as
	 * x509.CreateCertificateRequest writes for a subject alone
	 * (k8s.io/client-go/util/cert MakeCSR without SANs). */
	if (!b || !X509_REQ_set_version(req, 0) || !add_entry(name, NID_organizationName, CSR_ORG) ||
	    !add_entry(name, NID_commonName, cn) || !X509_REQ_set_pubkey(req, key) ||
	    X509_REQ_sign(req, key, EVP_sha256()) <= 0 || !PEM_write_bio_X509_REQ(b, req)) {
		ERR_clear_error();
		return -ENOMEM;
	}
	return bio_to_string(b, ret);
}

/* base64url without padding (Go's base64.RawURLEncoding). */
static char *b64url(const void *data, size_t len)
{
	char *s = b64_encode(data, len, true);
	if (!s)
		return NULL;
	for (char *p = s; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	return s;
}

static int digest_part(EVP_MD_CTX *md, const void *data, size_t len)
{
	_cleanup_free_ char *e = b64url(data, len);
	if (!e)
		return -ENOMEM;
	if (!EVP_DigestUpdate(md, e, strlen(e)) || !EVP_DigestUpdate(md, "|", 1))
		return -ENOMEM;
	return 0;
}

static void md_ctx_freep(EVP_MD_CTX **c)
{
	EVP_MD_CTX_free(*c);
}

int csr_name(EVP_PKEY *key, const char *machine_name, char **ret)
{
	char cn[CSR_CN_MAX + 1];
	if (subject_cn(machine_name, cn, sizeof(cn)) < 0)
		return -EINVAL;
	unsigned char *der = NULL;
	int der_len = i2d_PUBKEY(key, &der); /* PKIX SubjectPublicKeyInfo, as x509.MarshalPKIXPublicKey */
	if (der_len <= 0) {
		ERR_clear_error();
		return -ENOMEM;
	}
	_cleanup_(md_ctx_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
	_cleanup_free_ char *e = NULL;
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned sum_len = 0;
	int r = -ENOMEM;
	if (!md || !EVP_DigestInit_ex(md, EVP_sha512_256(), NULL))
		goto out;
	if ((r = digest_part(md, der, (size_t)der_len)) < 0 || (r = digest_part(md, cn, strlen(cn))) < 0 ||
	    (r = digest_part(md, CSR_ORG, strlen(CSR_ORG))) < 0)
		goto out;
	for (size_t i = 0; i < ELEMENTSOF(usages); i++)
		if ((r = digest_part(md, usages[i], strlen(usages[i]))) < 0)
			goto out;
	r = -ENOMEM;
	if (!EVP_DigestFinal_ex(md, sum, &sum_len))
		goto out;
	if (!(e = b64url(sum, sum_len)))
		goto out;
	size_t n = strlen(CSR_NAME_PREFIX) + strlen(e) + 1;
	char *name = malloc(n);
	if (!name)
		goto out;
	snprintf(name, n, "%s%s", CSR_NAME_PREFIX, e);
	*ret = name;
	r = 0;
out:
	OPENSSL_free(der);
	ERR_clear_error();
	return r;
}

int csr_object_json(const char *name, const char *request_pem, char **ret)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *req = b64_encode(request_pem, strlen(request_pem), false);
	if (!o || !req)
		return -ENOMEM;
	cJSON *meta, *spec, *u;
	if (!cJSON_AddStringToObject(o, "apiVersion", "certificates.k8s.io/v1") ||
	    !cJSON_AddStringToObject(o, "kind", "CertificateSigningRequest") ||
	    !(meta = cJSON_AddObjectToObject(o, "metadata")) || !cJSON_AddStringToObject(meta, "name", name) ||
	    !(spec = cJSON_AddObjectToObject(o, "spec")) || !cJSON_AddStringToObject(spec, "request", req) ||
	    !cJSON_AddStringToObject(spec, "signerName", CSR_SIGNER) ||
	    !cJSON_AddNumberToObject(spec, "expirationSeconds", CSR_EXPIRATION_SECONDS) ||
	    !(u = cJSON_AddArrayToObject(spec, "usages")))
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(usages); i++) {
		cJSON *s = cJSON_CreateString(usages[i]);
		if (!s || !cJSON_AddItemToArray(u, s)) {
			cJSON_Delete(s);
			return -ENOMEM;
		}
	}
	char *json = cJSON_PrintUnformatted(o);
	if (!json)
		return -ENOMEM;
	*ret = json;
	return 0;
}

/* Copies a JSON string into buf as printable ASCII ('?' for the rest). */
static void copy_printable(char *buf, size_t size, const cJSON *v)
{
	buf[0] = '\0';
	if (!cJSON_IsString(v) || !v->valuestring)
		return;
	size_t i = 0;
	for (const char *p = v->valuestring; *p && i + 1 < size; p++)
		buf[i++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	buf[i] = '\0';
}

static int status_from_json(const cJSON *o, struct csr_status *ret, char *err, size_t errlen)
{
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "CertificateSigningRequest") != 0)
		return fail(err, errlen, -EINVAL, "kind: not CertificateSigningRequest");

	struct csr_status s = { .state = CSR_PENDING };
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	copy_printable(s.uid, sizeof(s.uid), cJSON_GetObjectItemCaseSensitive(meta, "uid"));
	copy_printable(s.resource_version, sizeof(s.resource_version),
		       cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
	for (const char *p = s.resource_version; *p; p++)
		if (!strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._~-", *p)) {
			s.resource_version[0] = '\0'; /* not usable in a query: unknown */
			break;
		}
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
	if (status && !cJSON_IsObject(status))
		return fail(err, errlen, -EINVAL, "status: expected an object");
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
	if (conds && !cJSON_IsArray(conds) && !cJSON_IsNull(conds))
		return fail(err, errlen, -EINVAL, "status.conditions: expected a list");
	bool approved = false;
	const cJSON *c;
	cJSON_ArrayForEach(c, conds)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
		if (!cJSON_IsString(type))
			return fail(err, errlen, -EINVAL, "status.conditions[].type: expected a string");
		bool denied = strcmp(type->valuestring, "Denied") == 0, failed = strcmp(type->valuestring, "Failed") == 0;
		if (denied || failed) {
			s.state = denied ? CSR_DENIED : CSR_FAILED;
			copy_printable(s.reason, sizeof(s.reason), cJSON_GetObjectItemCaseSensitive(c, "reason"));
			copy_printable(s.message, sizeof(s.message), cJSON_GetObjectItemCaseSensitive(c, "message"));
			*ret = s;
			return 0;
		}
		if (strcmp(type->valuestring, "Approved") == 0)
			approved = true;
	}
	if (!approved) {
		*ret = s;
		return 0;
	}
	s.state = CSR_APPROVED;
	const cJSON *cert = cJSON_GetObjectItemCaseSensitive(status, "certificate");
	if (cert && !cJSON_IsString(cert) && !cJSON_IsNull(cert))
		return fail(err, errlen, -EINVAL, "status.certificate: expected a base64 string");
	if (cJSON_IsString(cert) && *cert->valuestring) {
		int r = b64_decode(cert->valuestring, strlen(cert->valuestring), CSR_CERT_MAX, 0, &s.certificate,
				   &s.certificate_len);
		if (r < 0)
			return fail(err, errlen, -EINVAL, "status.certificate: not base64 of at most %u bytes",
				    CSR_CERT_MAX);
		s.state = CSR_ISSUED;
	}
	*ret = s;
	return 0;
}

int csr_status_parse(const char *json, size_t len, struct csr_status *ret, char *err, size_t errlen)
{
	if (len > CSR_OBJECT_MAX)
		return fail(err, errlen, -EMSGSIZE, "larger than %u bytes", CSR_OBJECT_MAX);
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(o))
		return fail(err, errlen, -EINVAL, "not a JSON object");
	return status_from_json(o, ret, err, errlen);
}

int csr_event_parse(const char *line, size_t len, enum csr_event_type *type, struct csr_status *ret, char *err,
		    size_t errlen)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	if (len > CSR_OBJECT_MAX + 1024)
		return fail(err, errlen, -EMSGSIZE, "event larger than %u bytes", CSR_OBJECT_MAX + 1024);
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_ParseWithLength(line, len);
	if (!cJSON_IsObject(o))
		return fail(err, errlen, -EINVAL, "event: not a JSON object");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(o, "object");
	if (!cJSON_IsString(t))
		return fail(err, errlen, -EINVAL, "event type: expected a string");
	if (!cJSON_IsObject(obj))
		return fail(err, errlen, -EINVAL, "event object: expected an object");
	int k = -1;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(t->valuestring, types[i]) == 0)
			k = (int)i;
	if (k < 0)
		return fail(err, errlen, -EINVAL, "event type: unknown");
	*type = (enum csr_event_type)k;
	*ret = (struct csr_status){ .state = CSR_PENDING };
	if (k == CSR_EVENT_ERROR) {
		/* A Status: its message says why the stream ended (410 Expired). */
		copy_printable(ret->message, sizeof(ret->message), cJSON_GetObjectItemCaseSensitive(obj, "message"));
		return 0;
	}
	if (k == CSR_EVENT_BOOKMARK) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
		copy_printable(ret->resource_version, sizeof(ret->resource_version),
			       cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
		return 0;
	}
	return status_from_json(obj, ret, err, errlen);
}

void csr_status_done(struct csr_status *s)
{
	if (!s)
		return;
	free(s->certificate);
	s->certificate = NULL;
}

/* All certificates in PEM text, in order. */
static int read_certs(const char *pem, size_t len, STACK_OF(X509) **ret)
{
	if (len > INT32_MAX)
		return -EINVAL;
	_cleanup_(BIO_free_allp) BIO *b = BIO_new_mem_buf(pem, (int)len);
	_cleanup_(sk_X509_pop_freep) STACK_OF(X509) *s = sk_X509_new_null();
	if (!b || !s)
		return -ENOMEM;
	X509 *x;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (!sk_X509_push(s, x)) {
			X509_free(x);
			return -ENOMEM;
		}
	}
	ERR_clear_error();
	if (sk_X509_num(s) == 0)
		return -EINVAL;
	*ret = TAKE_PTR(s);
	return 0;
}

static int name_entries(X509_NAME *n, int nid, const char **only, int *count)
{
	*count = 0;
	*only = NULL;
	for (int i = -1; (i = X509_NAME_get_index_by_NID(n, nid, i)) >= 0;) {
		const ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i));
		(*count)++;
		*only = (const char *)ASN1_STRING_get0_data(d);
		if ((size_t)ASN1_STRING_length(d) != strlen(*only))
			return -EINVAL; /* a NUL inside */
	}
	return 0;
}

static int asn1_time(const ASN1_TIME *t, time_t *ret)
{
	struct tm tm;
	if (!ASN1_TIME_to_tm(t, &tm))
		return -EINVAL;
	*ret = timegm(&tm);
	return 0;
}

int csr_cert_check(const char *cert_pem, size_t len, EVP_PKEY *key, const char *machine_name, const char *ca_pem,
		   size_t ca_len, time_t now, struct csr_cert_info *ret, char *err, size_t errlen)
{
	_cleanup_(sk_X509_pop_freep) STACK_OF(X509) *chain = NULL, *cas = NULL;
	if (read_certs(cert_pem, len, &chain) < 0)
		return fail(err, errlen, -EINVAL, "no PEM certificate");
	if (read_certs(ca_pem, ca_len, &cas) < 0)
		return fail(err, errlen, -EINVAL, "no PEM certificate in the CA bundle");
	X509 *leaf = sk_X509_value(chain, 0);

	if (EVP_PKEY_eq(X509_get0_pubkey(leaf), key) != 1)
		return fail(err, errlen, -EINVAL, "the certificate is not for our key");

	char cn_want[CSR_CN_MAX + 1];
	int r = csr_machine_name_check(machine_name, err, errlen);
	if (r < 0)
		return r;
	if (subject_cn(machine_name, cn_want, sizeof(cn_want)) < 0)
		return fail(err, errlen, -EINVAL, "machine name not usable");
	X509_NAME *subj = X509_get_subject_name(leaf);
	const char *cn, *org;
	int n_cn, n_org;
	if (name_entries(subj, NID_commonName, &cn, &n_cn) < 0 ||
	    name_entries(subj, NID_organizationName, &org, &n_org) < 0)
		return fail(err, errlen, -EINVAL, "NUL byte in the subject");
	if (n_cn != 1 || strcmp(cn, cn_want) != 0)
		return fail(err, errlen, -EINVAL, "subject CN is \"%.128s\", not \"%.300s\"", n_cn ? cn : "",
			    cn_want);
	if (n_org != 1 || strcmp(org, CSR_ORG) != 0)
		return fail(err, errlen, -EINVAL, "subject O is not \"" CSR_ORG "\"");

	struct csr_cert_info info;
	if (asn1_time(X509_get0_notBefore(leaf), &info.not_before) < 0 ||
	    asn1_time(X509_get0_notAfter(leaf), &info.not_after) < 0)
		return fail(err, errlen, -EINVAL, "unreadable validity");
	if (now < info.not_before)
		return fail(err, errlen, -EINVAL, "not valid before %lld (%lld s from now; clock off?)",
			    (long long)info.not_before, (long long)(info.not_before - now));
	if (now >= info.not_after)
		/* Recently expired: the node's clock ahead of the signer's looks
		 * the same. */
		return fail(err, errlen, -EINVAL, "expired at %lld (%lld s ago%s)", (long long)info.not_after,
			    (long long)(now - info.not_after), now - info.not_after < 86400 ? "; clock off?" : "");

	_cleanup_(X509_STORE_freep) X509_STORE *store = X509_STORE_new();
	_cleanup_(X509_STORE_CTX_freep) X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	if (!store || !ctx)
		return -ENOMEM;
	for (int i = 0; i < sk_X509_num(cas); i++)
		if (!X509_STORE_add_cert(store, sk_X509_value(cas, i)))
			return fail(err, errlen, -ENOMEM, "out of memory");
	if (!X509_STORE_CTX_init(ctx, store, leaf, chain))
		return fail(err, errlen, -ENOMEM, "out of memory");
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), now);
	if (X509_verify_cert(ctx) != 1)
		return fail(err, errlen, -EINVAL, "does not chain to the cluster CA: %s",
			    X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	ERR_clear_error();
	*ret = info;
	return 0;
}

time_t csr_renew_at(const struct csr_cert_info *info, double random01)
{
	double lifetime = difftime(info->not_after, info->not_before);
	if (lifetime <= 0)
		return info->not_before;
	if (!(random01 >= 0.0 && random01 < 1.0))
		random01 = 0.0;
	/* wait.Jitter(d, 0.1) = d + random * 0.1 * d. */
	double d = 0.8 * lifetime * (1.0 + 0.1 * random01);
	return info->not_before + (time_t)d; /* d > 0: truncation is floor */
}
