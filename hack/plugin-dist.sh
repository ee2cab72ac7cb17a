#!/usr/bin/env bash
# Builds kubectl-etcd release archives into dist/ and renders the krew manifest for them
# (dist/etcd.yaml) with each archive's sha256. VERSION names the release (default: from git);
# PLATFORMS the os/arch pairs; BASE_URL where the archives will be downloaded from.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${VERSION:-v0.0.0-$(git rev-parse --short HEAD)}"
PLATFORMS="${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
BASE_URL="${BASE_URL:-https://github.com/cozystack/etcd-operator/releases/download/${VERSION}}"
DIST=dist

rm -rf "$DIST" && mkdir -p "$DIST"
platforms=""
for p in $PLATFORMS; do
	os="${p%/*}" arch="${p#*/}"
	name="kubectl-etcd_${os}_${arch}"
	work="$DIST/$name"
	mkdir -p "$work"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -ldflags "-s -w" -o "$work/kubectl-etcd" ./operator/cmd/kubectl-etcd
	tar -C "$work" -czf "$DIST/$name.tar.gz" .
	rm -rf "$work"
	sha="$(sha256sum "$DIST/$name.tar.gz" | cut -d' ' -f1)"
	echo "$sha  $name.tar.gz" >>"$DIST/SHA256SUMS"
	platforms+="  - selector:
      matchLabels:
        os: ${os}
        arch: ${arch}
    uri: ${BASE_URL}/${name}.tar.gz
    sha256: ${sha}
    bin: kubectl-etcd
"
done
awk -v version="$VERSION" -v platforms="${platforms%$'\n'}" \
	'{ gsub(/@VERSION@/, version); if ($0 == "@PLATFORMS@") print platforms; else print }' \
	hack/krew/etcd.yaml.tmpl >"$DIST/etcd.yaml"
echo "dist/:"; cat "$DIST/SHA256SUMS"
