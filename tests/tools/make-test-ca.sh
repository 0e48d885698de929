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
#
# make-test-ca.sh DIR NAME SAN: one more server certificate, DIR/NAME.crt
# and DIR/NAME.key, signed by the CA already in DIR, for the subjectAltName
# SAN (e.g. "DNS:apiserver.invalid": a certificate the CA vouches for that
# names another host). Its subject's CN is SAN's first name, so no part of
# it names 127.0.0.1 unless SAN does.
#
# EC P-256 keys (fast to make), valid for 2 days: nothing here outlives a
# test run. Exits 77 when openssl is missing (the test that calls it skips),
# 2 on bad usage, 1 when openssl fails.
set -euo pipefail

usage() {
        echo "usage: make-test-ca.sh DIR [NAME SAN]" >&2
        exit 2
}
case $# in
1) [ -n "$1" ] || usage ;;
3)
        # NAME becomes a file name beside ca.crt and ca.key
        if [ -z "$1" ] || [ -z "$3" ] || ! [[ $2 =~ ^[a-z][a-z0-9-]*$ ]] || [ "$2" = ca ]; then
                usage
        fi
        ;;
*) usage ;;
esac
if ! command -v openssl >/dev/null; then
        echo "make-test-ca.sh: openssl is not installed (scripts/setup-deps.sh installs it)" >&2
        exit 77
fi

dir=$1
if [ $# -eq 3 ] && { [ ! -f "$dir/ca.crt" ] || [ ! -f "$dir/ca.key" ]; }; then
        echo "make-test-ca.sh: no CA in $dir (make-test-ca.sh $dir makes one)" >&2
        exit 2
fi
mkdir -p "$dir"
umask 077

fail_openssl() {
        cat "$dir/openssl.err" >&2
        exit 1
}

# issue NAME SAN CN: DIR/NAME.crt and DIR/NAME.key, signed by DIR's CA. Clients
# check the SAN, never the CN (RFC 6125); curl and libcurl match an IP
# literal only against an IP SAN.
issue() {
        printf '%s\n' "basicConstraints = critical, CA:FALSE" \
                "keyUsage = critical, digitalSignature" \
                "extendedKeyUsage = serverAuth" \
                "subjectAltName = $2" \
                "authorityKeyIdentifier = keyid" \
                "subjectKeyIdentifier = hash" >"$dir/$1.ext"
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
                -keyout "$dir/$1.key" -out "$dir/$1.csr" -subj "/CN=$3" \
                2>"$dir/openssl.err" || fail_openssl
        openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
                -set_serial "0x$(openssl rand -hex 8)" -days 2 -sha256 \
                -extfile "$dir/$1.ext" -out "$dir/$1.crt" 2>"$dir/openssl.err" || fail_openssl
        openssl verify -CAfile "$dir/ca.crt" "$dir/$1.crt" >/dev/null 2>"$dir/openssl.err" ||
                fail_openssl
        rm -f "$dir/$1.csr" "$dir/$1.ext" "$dir/openssl.err"
        # Certificates are public; keys stay 0600.
        chmod 644 "$dir/$1.crt"
}

if [ $# -eq 3 ]; then
        cn=${3%%,*}
        issue "$2" "$3" "${cn#*:}"
        exit 0
fi

# The CA: a self-signed root with the extensions verifiers insist on (GnuTLS
# and OpenSSL both refuse a signer without CA:TRUE).
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 -sha256 \
        -subj "/CN=${CA_NAME:-aicr-enroot-agent test CA}" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash" 2>"$dir/openssl.err" || fail_openssl
chmod 644 "$dir/ca.crt"

issue server "IP:127.0.0.1, DNS:localhost" 127.0.0.1
