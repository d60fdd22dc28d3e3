#!/bin/bash
# mkcerts.sh DIR [NODE]: generates the test PKI for the TLS test API server
# (tests/lib/kube-apiserver.py) into DIR with openssl. EC P-256 keys, so it
# takes well under a second. Files (every key 0600):
#   ca.crt ca.key                 the cluster CA (the agent's caFile)
#   server.crt server.key         127.0.0.1 / localhost (+ $MKCERTS_SERVER_SAN), signed by ca
#   other-ca.crt other-ca.key     a second, unrelated CA
#   server-other-ca.crt/.key      127.0.0.1 / localhost, signed by other-ca
#   server-wrong-host.crt/.key    signed by ca, but only for wrong.example.com
#   client.crt client.key         CN=system:node:NODE, O=system:nodes (signed by ca)
#   client-other-ca.crt/.key      the same subject, signed by other-ca
# NODE defaults to ip-10-250-17-203.eu-central-1.compute.internal. Never touches anything outside DIR.
set -euo pipefail
dir=${1:?usage: mkcerts.sh DIR [NODE]}
node=${2:-ip-10-250-17-203.eu-central-1.compute.internal}
mkdir -p "$dir"
cd "$dir"
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# ca NAME SUBJECT
ca() {
	key "$1.key"
	openssl req -x509 -new -key "$1.key" -subj "$2" -days 3650 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$1.crt" 2>/dev/null
}

# leaf NAME CA SUBJECT EXTENSIONS...
leaf() {
	local name=$1 ca=$2 subj=$3 ext
	shift 3
	ext=$(mktemp "$dir/ext.XXXXXX")
	printf '%s\n' "$@" >"$ext"
	key "$name.key"
	openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
		-days 825 -sha256 -extfile "$ext" -out "$name.crt" 2>/dev/null
	rm -f "$name.csr" "$ext"
}

server_ext=("basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment"
	"extendedKeyUsage=serverAuth")
client_ext=("basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment"
	"extendedKeyUsage=clientAuth")

ca ca "/CN=node-agent-test-ca"
ca other-ca "/CN=some-other-ca"
leaf server ca "/CN=kube-apiserver" "${server_ext[@]}" "subjectAltName=DNS:localhost,IP:127.0.0.1${MKCERTS_SERVER_SAN:+,$MKCERTS_SERVER_SAN}"
leaf server-other-ca other-ca "/CN=kube-apiserver" "${server_ext[@]}" "subjectAltName=DNS:localhost,IP:127.0.0.1"
leaf server-wrong-host ca "/CN=wrong.example.com" "${server_ext[@]}" "subjectAltName=DNS:wrong.example.com"
leaf client ca "/O=system:nodes/CN=system:node:$node" "${client_ext[@]}"
leaf client-other-ca other-ca "/O=system:nodes/CN=system:node:$node" "${client_ext[@]}"
rm -f ./*.srl
chmod 0644 ./*.crt
