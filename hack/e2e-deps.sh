#!/usr/bin/env bash
# Debian packages the local cluster needs beyond the base machine: nftables for kube-proxy's
# nftables mode (ClusterIP Services inside the cluster's network namespace); runc and the CNI
# plugins (bridge, host-local) for its real nodes (containerd and the kubelet come from the tools
# cache). Idempotent.
set -euo pipefail
missing=()
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || missing+=(containernetworking-plugins)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then echo "e2e needs root and these packages: ${missing[*]}" >&2; exit 1; fi
echo "[e2e-deps] installing ${missing[*]}" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
