#!/bin/sh
# Makes a self-signed TLS certificate for local use of the nginx front end:
#   ops/make-cert.sh [OUTPUT_DIR] [HOST_NAME]
# writes OUTPUT_DIR/tls.crt and OUTPUT_DIR/tls.key (default nginx/certs, host name localhost),
# valid for HOST_NAME, localhost and 127.0.0.1. Never overwrites an existing pair.
# In production use a certificate from a real CA and put it at the same two paths.
set -eu

out_dir=${1:-nginx/certs}
host=${2:-localhost}

if [ -e "$out_dir/tls.crt" ] || [ -e "$out_dir/tls.key" ]; then
  echo "$out_dir/tls.crt or tls.key already exists; remove them first to make a new pair" >&2
  exit 1
fi
mkdir -p "$out_dir"
san="DNS:localhost,IP:127.0.0.1"
[ "$host" = localhost ] || san="DNS:$host,$san"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 365 \
  -keyout "$out_dir/tls.key" -out "$out_dir/tls.crt" \
  -subj "/CN=$host" \
  -addext "subjectAltName=$san" \
  -addext "basicConstraints=critical,CA:FALSE" \
  -addext "keyUsage=critical,digitalSignature,keyEncipherment" \
  -addext "extendedKeyUsage=serverAuth" 2>/dev/null
# nginx reads the key as root before it drops privileges; the certificate is public.
chmod 600 "$out_dir/tls.key"
chmod 644 "$out_dir/tls.crt"
echo "Wrote $out_dir/tls.crt and $out_dir/tls.key (self-signed for $host, 365 days)"
