#!/usr/bin/env bash
# Debian packages `make lint` needs beyond the base machine: shellcheck for the shell scripts. Idempotent.
set -euo pipefail
command -v shellcheck >/dev/null 2>&1 && exit 0
if [[ $(id -u) -ne 0 ]]; then echo "lint needs shellcheck (Debian package shellcheck); install it or run as root" >&2; exit 1; fi
echo "[lint-deps] installing shellcheck" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck >&2
