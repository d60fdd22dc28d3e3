/* libFuzzer target for csr_status_parse() (a CertificateSigningRequest as
 * the API server returns it), csr_event_parse() (a line of a watch on CSRs) and csr_cert_check() on whatever certificate it
 * yields: never a crash or a leak, and no certificate is accepted for a key
 * that never had one signed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ca[] = "-----BEGIN CERTIFICATE-----\n"
			 "MIIBUTCB+KADAgECAgEBMAoGCCqGSM49BAMCMBIxEDAOBgNVBAMMB3Rlc3QtY2Ew\n"
			 "-----END CERTIFICATE-----\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static EVP_PKEY *key;
	if (!key && csr_key_new(&key) < 0)
		abort();
	struct csr_status s;
	char err[CSR_ERROR_MAX];
	if (csr_status_parse((const char *)data, size, &s, err, sizeof(err)) == 0) {
		if (s.state == CSR_ISSUED) {
			struct csr_cert_info info;
			if (!s.certificate ||
			    csr_cert_check((const char *)s.certificate, s.certificate_len, key, "m", ca, strlen(ca),
					   1800000000, &info, err, sizeof(err)) == 0)
				abort();
		} else if (s.certificate) {
			abort();
		}
		csr_status_done(&s);
	}
	/* The same bytes as a watch event line (csr_event_parse()). */
	enum csr_event_type t;
	if (csr_event_parse((const char *)data, size, &t, &s, err, sizeof(err)) == 0) {
		if (s.certificate && s.state != CSR_ISSUED)
			abort();
		csr_status_done(&s);
	}
	return 0;
}
