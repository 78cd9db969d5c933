#!/bin/sh
# Run a command (pip, npm) with the build host's extra CA certificates trusted, for builds that
# reach package registries through a TLS-intercepting proxy. The PEM text comes from the
# EXTRA_CA_CERTS build argument (docker/build-images.sh fills it from the host's
# /usr/local/share/ca-certificates); the bundle lives in /tmp only while the command runs and is
# never added to the image's trust store. Without EXTRA_CA_CERTS the command runs unchanged.
set -eu
if [ -z "${EXTRA_CA_CERTS:-}" ]; then
  exec "$@"
fi
bundle="$(mktemp /tmp/build-ca.XXXXXX.pem)"
trap 'rm -f "$bundle"' EXIT
cat /etc/ssl/certs/ca-certificates.crt >"$bundle"
printf '%s\n' "$EXTRA_CA_CERTS" >>"$bundle"
PIP_CERT="$bundle" SSL_CERT_FILE="$bundle" REQUESTS_CA_BUNDLE="$bundle" \
  NPM_CONFIG_CAFILE="$bundle" NODE_EXTRA_CA_CERTS="$bundle" "$@"
