#!/usr/bin/env python3
"""Gardener's CSR approver and the kube-apiserver-client signer, as one test
peer for the real kube-apiserver (tests/lib/realkube.sh), robust to its
restarts: lists CertificateSigningRequests as the admin every --interval
seconds (a failed list is simply tried again: the API server may be down),
approves each pending node-agent-csr-* (PUT .../approval, as
gardener-resource-manager's csrapprover does for a node-agent) and issues
it (PUT .../status), --delay seconds after it first saw it, with a certificate from the cluster CA: the CSR's
subject copied, client auth, --lifetime seconds from now. One JSON line per
certificate issued on stdout (name, time). Python's cryptography signs (no
process per certificate), as kube-controller-manager's signer would: the
subject is kept as the request has it, whatever its length."""
import argparse, base64, datetime, json, ssl, sys, time, urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

p = argparse.ArgumentParser()
p.add_argument("--server", required=True)
p.add_argument("--ca", required=True, help="the CA bundle to trust")
p.add_argument("--ca-cert", required=True)
p.add_argument("--ca-key", required=True)
p.add_argument("--token-file", required=True)
p.add_argument("--lifetime", type=int, default=3600)
p.add_argument("--interval", type=float, default=0.05)
p.add_argument("--delay", type=float, default=0, help="approve a CSR this many seconds after first seeing it")
o = p.parse_args()
ctx = ssl.create_default_context(cafile=o.ca)
token = open(o.token_file).read().strip()
ca_cert = x509.load_pem_x509_certificate(open(o.ca_cert, "rb").read())
ca_key = serialization.load_pem_private_key(open(o.ca_key, "rb").read(), None)
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def call(method, path, body=None):
    req = urllib.request.Request(o.server + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
        return json.load(r)


def sign(pem):
    req = x509.load_pem_x509_csr(pem)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(req.subject).issuer_name(ca_cert.subject)
            .public_key(req.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=1))
            .not_valid_after(now + datetime.timedelta(seconds=o.lifetime))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, content_commitment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


print(json.dumps({"listening": True}), flush=True)
last = None
seen = {}
while True:
    try:
        for c in call("GET", CSRS)["items"]:
            name = c["metadata"]["name"]
            if not name.startswith("node-agent-csr-") or c.get("status", {}).get("certificate"):
                continue
            conds = [x["type"] for x in c.get("status", {}).get("conditions") or []]
            if "Denied" in conds or "Failed" in conds or time.time() - seen.setdefault(name, time.time()) < o.delay:
                continue
            if "Approved" not in conds:
                c.setdefault("status", {})["conditions"] = [{"type": "Approved", "status": "True",
                                                           "reason": "RequestApproved",
                                                           "message": "approved by tests/lib/rk-csr-signer.py"}]
                c = call("PUT", CSRS + "/" + name + "/approval", c)
            c["status"]["certificate"] = base64.b64encode(sign(base64.b64decode(c["spec"]["request"]))).decode()
            call("PUT", CSRS + "/" + name + "/status", c)
            print(json.dumps({"issued": name, "t": time.time()}), flush=True)
    except Exception as e:  # the API server restarting, a conflict: next round (said once)
        if str(e) != last:
            print(json.dumps({"error": str(e)[:200], "t": time.time()}), flush=True)
        last = str(e)
    else:
        last = None
    time.sleep(o.interval)
