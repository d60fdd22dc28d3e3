/* The client certificate of a node-agent through the Kubernetes
 * CertificateSigningRequest API, with gardener-node-agent's contract so that
 * Gardener's approver and node-agent authorizer accept it:
 *
 *  - key: ECDSA P-256 (keyutil.MakeEllipticPrivateKeyPEM in
 *    gardener/gardener pkg/utils/kubernetes/certificatesigningrequest/
 *    certificate.go, RequestCertificate);
 *  - subject O=gardener.cloud:node-agents,
 *    CN=gardener.cloud:node-agent:machine:<machine name>
 *    (pkg/nodeagent/certificate.go, RequestAndStoreKubeconfig), encoded as
 *    Go's crypto/x509 encodes it (k8s.io/client-go/util/cert MakeCSR):
 *    one RDN each, O first, PrintableString values (UTF8String when a
 *    value has a byte outside PrintableString's set), no length limit:
 *    a machine name may be as long as a Kubernetes object name (253), so
 *    the CN up to 287 characters, far past X.520's ub-common-name (64),
 *    which neither Go nor the kube-apiserver nor Gardener's authorizer
 *    applies. tests/fixtures/csr/ holds CSRs made by Go to compare with;
 *  - signer kubernetes.io/kube-apiserver-client, usages digital signature,
 *    key encipherment, client auth, expirationSeconds 720 h;
 *  - name "node-agent-csr-" + base64url(SHA-512/256 over base64url(PKIX
 *    public key) "|" base64url(CN) "|" base64url(O) "|" each usage "|")
 *    (ComputeDigestedName, same file).
 *
 * OpenSSL makes the key and the request and checks the issued certificate.
 * No I/O, no logging; errors are written to err. */
#ifndef NA_CSR_H
#define NA_CSR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>

#define CSR_ORG "gardener.cloud:node-agents"
#define CSR_CN_PREFIX "gardener.cloud:node-agent:machine:"
#define CSR_NAME_PREFIX "node-agent-csr-"
#define CSR_SIGNER "kubernetes.io/kube-apiserver-client"
#define CSR_EXPIRATION_SECONDS 2592000u /* 720 h */
#define CSR_OBJECT_MAX (1u << 20)       /* bytes of a CSR object we read */
#define CSR_CERT_MAX (64u << 10)        /* bytes of an issued certificate (PEM) */
#define CSR_ERROR_MAX 512
/* The longest machine name: a Machine is a Kubernetes object, its name a
 * DNS subdomain (gardener's machine names are 40-60 characters). */
#define CSR_MACHINE_NAME_MAX 253u
#define CSR_CN_MAX (sizeof(CSR_CN_PREFIX) - 1 + CSR_MACHINE_NAME_MAX)

/* Whether machine_name can go into the CN: 1 to CSR_MACHINE_NAME_MAX bytes
 * of printable ASCII (what node-agent's configuration accepts). Returns 0,
 * or -EINVAL/-ENAMETOOLONG with err naming the name (its first 64 bytes)
 * and the limit. Every function below that takes a machine name refuses
 * (-EINVAL) one that fails this. */
int csr_machine_name_check(const char *machine_name, char *err, size_t errlen);

/* A new ECDSA P-256 key. */
int csr_key_new(EVP_PKEY **ret);

/* The key as PKCS#8 PEM (*ret is a new string; wipe and free it). */
int csr_key_to_pem(EVP_PKEY *key, char **ret);

/* Reads the first private key from PEM text; -EINVAL if there is none or it
 * is not P-256. */
int csr_key_from_pem(const char *pem, size_t len, EVP_PKEY **ret);

/* The PEM certification request for machine_name signed with key. */
int csr_request_pem(EVP_PKEY *key, const char *machine_name, char **ret);

/* gardener-node-agent's digested CSR name for key and machine_name. */
int csr_name(EVP_PKEY *key, const char *machine_name, char **ret);

/* The certificates.k8s.io/v1 CertificateSigningRequest to POST (JSON). */
int csr_object_json(const char *name, const char *request_pem, char **ret);

enum csr_state {
	CSR_PENDING,   /* neither approved nor denied yet */
	CSR_APPROVED,  /* approved, certificate not issued yet */
	CSR_ISSUED,    /* approved and status.certificate set */
	CSR_DENIED,
	CSR_FAILED,
};

struct csr_status {
	enum csr_state state;
	char uid[128];
	char resource_version[65];    /* metadata.resourceVersion; "" when absent or not
	                                 [0-9A-Za-z._~-] (usable in a query as is) */
	char reason[128];             /* of the Denied/Failed condition, printable */
	char message[256];
	unsigned char *certificate;   /* ISSUED: the decoded PEM, NUL-terminated */
	size_t certificate_len;
};

/* Parses a CertificateSigningRequest object as the API server returns it.
 * Denied and Failed win over Approved (as client-go's waiter reads them). */
int csr_status_parse(const char *json, size_t len, struct csr_status *ret, char *err, size_t errlen);
void csr_status_done(struct csr_status *s);

enum csr_event_type {
	CSR_EVENT_ADDED,
	CSR_EVENT_MODIFIED,
	CSR_EVENT_DELETED,
	CSR_EVENT_BOOKMARK,
	CSR_EVENT_ERROR,
};

/* Parses one line of a watch on CertificateSigningRequests
 * ({"type":...,"object":{...}}): for ADDED/MODIFIED/DELETED *ret is the
 * object as csr_status_parse() reads it; for BOOKMARK only
 * ret->resource_version (unchecked: "" or printable) is set; for ERROR only
 * ret->message (the Status's). Pure; -EINVAL/-EMSGSIZE with err otherwise.
 * csr_status_done(ret) after success. */
int csr_event_parse(const char *line, size_t len, enum csr_event_type *type, struct csr_status *ret, char *err,
		    size_t errlen);

struct csr_cert_info {
	time_t not_before;
	time_t not_after;
};

/* Checks an issued certificate (PEM; the first certificate is the leaf,
 * others are intermediates) before it is used: its public key is key's, its
 * subject is exactly CN=<prefix><machine_name> with O=gardener.cloud:node-agents,
 * it is valid at now, and it chains to a certificate in ca_pem for client
 * authentication. On failure returns -EINVAL with the reason in err. */
int csr_cert_check(const char *cert_pem, size_t len, EVP_PKEY *key, const char *machine_name, const char *ca_pem,
		   size_t ca_len, time_t now, struct csr_cert_info *ret, char *err, size_t errlen);

/* When to renew: not_before + a jittered 80-88 % of the lifetime
 * (wait.Jitter(0.8 x lifetime, 0.1) in gardener/gardener
 * pkg/nodeagent/controller/certificate). random01 is in [0, 1). */
time_t csr_renew_at(const struct csr_cert_info *info, double random01);

#endif
