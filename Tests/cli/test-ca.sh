#!/usr/bin/env bash
# Makes a certificate authority and a server certificate it signed, for 127.0.0.1 and localhost
# (P-256, valid one day), in DIR: ca.pem, server.pem, server.key, and a client certificate
# (client.pem, client.key). For the relay's check and
# benchmark, whose clients and upstreams trust only that CA.
#   usage: Tests/cli/test-ca.sh DIR
set -euo pipefail
dir=$1
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
  -days 1 -subj "/CN=Attache test CA" 2> /dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" \
  -subj "/CN=localhost" 2> /dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$dir/san.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 1 \
  -extfile "$dir/san.ext" -out "$dir/server.pem" 2> /dev/null
# A client certificate the same CA signed (an APNs provider certificate's stand-in).
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/client.key" -out "$dir/client.csr" \
  -subj "/CN=com.example.app" 2> /dev/null
openssl x509 -req -in "$dir/client.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 1 \
  -out "$dir/client.pem" 2> /dev/null
