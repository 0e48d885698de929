#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# make-test-ca.sh DIR: a throwaway CA and a server certificate for 127.0.0.1
# and localhost, for the fake API server (tests/tools/fake-apiserver).
# Writes into DIR (created if needed):
#   ca.crt       the CA certificate: what a pod finds as
#                serviceaccount/ca.crt, what curl takes as --cacert
#   ca.key       its key (only to sign more certificates)
#   server.crt   the server certificate, signed by the CA; SAN IP:127.0.0.1,
#                DNS:localhost; serverAuth
#   server.key   its key, unencrypted (PKCS#8 PEM)
# CA_NAME, when set, is the CA's common name: two CAs of one name are one
# issuer to a verifier, which looks no further than the first it holds.
# EC P-256 keys (fast to make), valid for 2 days: nothing here outlives a
# test run. Exits 77 when openssl is missing (the test that calls it skips),
# 2 on bad usage, 1 when openssl fails.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
        echo "usage: make-test-ca.sh DIR" >&2
        exit 2
fi
if ! command -v openssl >/dev/null; then
        echo "make-test-ca.sh: openssl is not installed (scripts/setup-deps.sh installs it)" >&2
        exit 77
fi

dir=$1
mkdir -p "$dir"
umask 077

# The CA: a self-signed root with the extensions verifiers insist on (GnuTLS
# and OpenSSL both refuse a signer without CA:TRUE).
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 -sha256 \
        -subj "/CN=${CA_NAME:-aicr-enroot-agent test CA}" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash" 2>"$dir/openssl.err" || {
        cat "$dir/openssl.err" >&2
        exit 1
}

# The server: clients check the SAN, never the CN (RFC 6125); curl and
# libcurl match an IP literal only against an IP SAN.
cat >"$dir/server.ext" <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
authorityKeyIdentifier = keyid
subjectKeyIdentifier = hash
EOF
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=127.0.0.1" \
        2>"$dir/openssl.err" || {
        cat "$dir/openssl.err" >&2
        exit 1
}
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
        -set_serial "0x$(openssl rand -hex 8)" -days 2 -sha256 \
        -extfile "$dir/server.ext" -out "$dir/server.crt" 2>"$dir/openssl.err" || {
        cat "$dir/openssl.err" >&2
        exit 1
}
openssl verify -CAfile "$dir/ca.crt" "$dir/server.crt" >/dev/null 2>"$dir/openssl.err" || {
        cat "$dir/openssl.err" >&2
        exit 1
}
rm -f "$dir/server.csr" "$dir/server.ext" "$dir/openssl.err"
# Certificates are public; keys stay 0600.
chmod 644 "$dir/ca.crt" "$dir/server.crt"
