#!/usr/bin/env bash
# Builds every tool the project needs from the Go module proxy into a cache outside the
# clone, one folder per tool and version. A folder is trusted only if it carries the
# recipe marker; builds happen in a temp folder renamed at the end, so an interrupted
# build is never trusted. Nothing prebuilt is downloaded.
#
# Usage: hack/tools.sh [tool...]   tools: etcd kube controller-gen helm staticcheck coredns cert-manager versitygw prometheus
#                                          kubelet containerd (the local cluster's real nodes)
#        hack/tools.sh --print-dir  prints the cache folder and exits
# Output: progress on stderr; the last stdout line is the envtest assets folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=versions.env
. "$ROOT/hack/versions.env"

TOOLS_DIR="${ETCD_OPERATOR_TOOLS:-$HOME/.cache/etcd-operator-tools}"
# Bump when a recipe below changes so caches built by the old recipe are rebuilt.
RECIPE=1
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod

if [[ "${1:-}" == "--print-dir" ]]; then echo "$TOOLS_DIR"; exit 0; fi
mkdir -p "$TOOLS_DIR"
# One builder at a time per cache: parallel `make` runs (or clones) wait instead of building twice.
exec 9>"$TOOLS_DIR/.lock"
if ! flock -n 9; then
	printf '[tools] waiting for another build of the tools cache to finish ...\n' >&2
	flock 9
fi

log() { printf '[tools] %s\n' "$*" >&2; }

# build_into NAME FUNC [SALT]: runs FUNC with $OUT set to a temp folder, then publishes it.
# SALT (optional) becomes part of the recipe marker, for tools built from sources in this repo.
build_into() {
	local name="$1" fn="$2" final="$TOOLS_DIR/$1" marker=".recipe-$RECIPE${3:+-$3}"
	if [[ -f "$final/$marker" ]]; then return 0; fi
	local start tmp
	start=$(date +%s)
	tmp="$(mktemp -d "$TOOLS_DIR/.build-$name.XXXXXX")"
	log "building $name ..."
	# A subshell: recipes cd into their work folder, which is removed afterwards.
	(mkdir -p "$tmp/work" && cd "$tmp/work" && OUT="$tmp/bin" WORK="$tmp/work" "$fn")
	touch "$tmp/bin/$marker"
	rm -rf "$final"
	mv "$tmp/bin" "$final"
	rm -rf "$tmp"
	log "built $name in $(( $(date +%s) - start ))s"
}

k8s_ldflags() {
	local v="$KUBERNETES_VERSION" minor ld="-s -w"
	minor="$(echo "$v" | cut -d. -f2)"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
	done
	echo "$ld"
}

# kube_wrapper_module writes the go.mod of a wrapper module for k8s.io/kubernetes commands:
# k8s.io/kubernetes' go.mod points its staging modules at ./staging; the wrapper replaces each
# with the published library of the same patch.
kube_wrapper_module() {
	local lib="v0.${KUBERNETES_VERSION#v1.}"
	printf 'module local/kubebuild\n\ngo 1.26.0\n\ngodebug default=go1.26\n\nreplace (\n'
	for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
		cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
		cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
		kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
		mount-utils pod-security-admission sample-apiserver streaming; do
		printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$lib"
	done
	printf ')\n'
}

# build_kube_cmds CMD...: builds k8s.io/kubernetes/cmd/CMD of KUBERNETES_VERSION into $OUT.
build_kube_cmds() {
	mkdir -p "$WORK" "$OUT"
	cd "$WORK"
	kube_wrapper_module >go.mod
	local pkgs=()
	for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$KUBERNETES_VERSION"); done
	go get -tool "${pkgs[@]}" >&2
	local ld; ld="$(k8s_ldflags)"
	for c in "$@"; do
		local s; s=$(date +%s)
		go build -trimpath -ldflags "$ld" -o "$OUT/$c" "k8s.io/kubernetes/cmd/$c"
		log "  $c: $(( $(date +%s) - s ))s"
	done
}

build_kube() { build_kube_cmds kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; }
# The kubelet of the local cluster's real nodes, in its own folder: adding it to the kubernetes
# folder would change that folder's recipe and rebuild every Kubernetes binary.
build_kubelet() { build_kube_cmds kubelet; }

# containerd for the real nodes: the daemon, its runc shim and ctr, static (no cgo), without the
# snapshotters that need cgo or kernel tooling (overlayfs and native remain).
build_containerd() {
	mkdir -p "$WORK" "$OUT"
	cd "$WORK"
	printf 'module local/containerdbuild\n\ngo 1.26.0\n' >go.mod
	local m="github.com/containerd/containerd/v2"
	go get -tool "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
		"$m/cmd/ctr@$CONTAINERD_VERSION" >&2
	local ld="-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Revision=module-proxy"
	for c in containerd containerd-shim-runc-v2 ctr; do
		go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ld" -o "$OUT/$c" "$m/cmd/$c"
	done
}

build_etcd() {
	mkdir -p "$WORK" "$OUT"
	cd "$WORK"
	printf 'module local/etcdbuild\n\ngo 1.26.0\n' >go.mod
	# etcd's go.mods carry relative replaces, so `go install pkg@v` is refused; a wrapper
	# module that requires only etcd lets MVS pick exactly etcd's own pins.
	go get -tool "go.etcd.io/etcd/server/v3@$ETCD_V" "go.etcd.io/etcd/etcdctl/v3@$ETCD_V" \
		"go.etcd.io/etcd/etcdutl/v3@$ETCD_V" >&2
	local ld="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-proxy"
	go build -trimpath -ldflags "$ld" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
	go build -trimpath -ldflags "$ld" -o "$OUT/etcdctl" go.etcd.io/etcd/etcdctl/v3
	go build -trimpath -ldflags "$ld" -o "$OUT/etcdutl" go.etcd.io/etcd/etcdutl/v3
}

go_install() { # MODULE_PKG@VERSION [ldflags]
	mkdir -p "$OUT"
	GOBIN="$OUT" go install -trimpath -ldflags "-s -w ${2:-}" "$1" >&2
}
build_controller_gen() { go_install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"; }

# helm's release builds stamp the Kubernetes version that `helm template`/`lint` assume without
# --kube-version; unstamped it is v1.20.0, which charts requiring a newer Kubernetes refuse. As
# helm's Makefile does: major = 1 + client-go's major (v0.x), minor = client-go's minor, read from
# helm's own go.mod. Bump HELM_RECIPE when build_helm changes: it salts the recipe marker.
HELM_RECIPE=2
helm_ldflags() {
	local gomod cg major minor
	gomod="$(go list -m -f '{{.GoMod}}' "helm.sh/helm/v3@$HELM_VERSION")"
	cg="$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v/ { print $2; exit }' "$gomod")"
	[[ "$cg" =~ ^v([0-9]+)\.([0-9]+)\. ]] || { log "helm $HELM_VERSION: no k8s.io/client-go version in $gomod"; return 1; }
	major=$(( BASH_REMATCH[1] + 1 )) minor="${BASH_REMATCH[2]}"
	local ld="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		ld="$ld -X $p.k8sVersionMajor=$major -X $p.k8sVersionMinor=$minor"
	done
	echo "$ld"
}
build_helm() {
	local ld; ld="$(helm_ldflags)"
	go_install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ld"
}
build_staticcheck() { go_install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"; }
# versitygw (S3 gateway; the e2e tests use its posix backend). Its Makefile stamps these three
# from git, which a module-proxy build does not have: the version, and the version's commit time
# from the proxy as BuildTime, so the binary stays reproducible.
build_versitygw() {
	local m="github.com/versity/versitygw" t
	t="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "$m@$VERSITYGW_VERSION")"
	go_install "$m/cmd/versitygw@$VERSITYGW_VERSION" \
		"-X main.Version=$VERSITYGW_VERSION -X main.Build=module-proxy -X main.BuildTime=$t"
}
# promtool (alert rule checks and unit tests) and the Prometheus server (the alerting e2e; its web
# UI's assets are not in the module, so it serves the API only). Prometheus' Makefile stamps its
# version through prometheus/common; the module version is the Go one (v0.3xx for Prometheus 3.x).
# Bump PROMETHEUS_RECIPE when build_prometheus changes: it salts the recipe marker.
PROMETHEUS_RECIPE=2
build_prometheus() {
	local ld="-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION -X github.com/prometheus/common/version.Branch=module-proxy"
	go_install "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" "$ld"
	go_install "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" "$ld"
}
build_coredns() { go_install "github.com/coredns/coredns@$COREDNS_VERSION" "-X github.com/coredns/coredns/coremain.GitCommit=module-proxy"; }

# cert-manager's controller main is not on the module proxy (it lives in a nested module), so a
# wrapper module of ours (hack/tools/cert-manager-controller: its own main over cert-manager's
# controller packages, its own go.mod/go.sum) is built instead. Its sources salt the recipe
# marker: editing them rebuilds it. The CRDs of the same version are kept beside the binary.
CM_WRAPPER="$ROOT/hack/tools/cert-manager-controller"
cert_manager_salt() { cat "$CM_WRAPPER"/go.mod "$CM_WRAPPER"/go.sum "$CM_WRAPPER"/*.go | sha256sum | cut -c1-12; }
build_cert_manager() {
	mkdir -p "$WORK" "$OUT/crds"
	cp "$CM_WRAPPER"/go.mod "$CM_WRAPPER"/go.sum "$CM_WRAPPER"/*.go "$WORK/"
	cd "$WORK"
	# The wrapper's go.mod is the truth for what is built: read-only, so a version bump in
	# versions.env without the matching `go get` in the wrapper fails here instead of drifting.
	local have
	have="$(GOFLAGS=-mod=readonly go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)"
	if [[ "$have" != "$CERT_MANAGER_VERSION" ]]; then
		log "hack/tools/cert-manager-controller requires cert-manager $have, versions.env says $CERT_MANAGER_VERSION;"
		log "run there: go get github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION && go mod tidy"
		return 1
	fi
	GOFLAGS=-mod=readonly go build -trimpath \
		-ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION" \
		-o "$OUT/cert-manager-controller" .
	cp "$(GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)"/deploy/crds/*.yaml "$OUT/crds/"
	chmod 0644 "$OUT"/crds/*.yaml
}

# envtest wants one folder holding kube-apiserver, etcd and kubectl.
link_envtest_assets() {
	local dir="$TOOLS_DIR/envtest-$KUBERNETES_VERSION-etcd-$ETCD_DEFAULT_VERSION"
	mkdir -p "$dir"
	ln -sfn "$TOOLS_DIR/kubernetes-$KUBERNETES_VERSION/kube-apiserver" "$dir/kube-apiserver"
	ln -sfn "$TOOLS_DIR/kubernetes-$KUBERNETES_VERSION/kubectl" "$dir/kubectl"
	ln -sfn "$TOOLS_DIR/etcd-$ETCD_DEFAULT_VERSION/etcd" "$dir/etcd"
	echo "$dir"
}

want="${*:-etcd kube controller-gen helm staticcheck coredns cert-manager versitygw prometheus kubelet containerd}"
total_start=$(date +%s)
for t in $want; do
	case "$t" in
	etcd)
		# the default first: envtest needs it soonest
		for v in $ETCD_DEFAULT_VERSION $ETCD_VERSIONS; do ETCD_V="$v" build_into "etcd-$v" build_etcd; done ;;
	kube) build_into "kubernetes-$KUBERNETES_VERSION" build_kube ;;
	kubelet) build_into "kubelet-$KUBERNETES_VERSION" build_kubelet ;;
	containerd) build_into "containerd-$CONTAINERD_VERSION" build_containerd ;;
	controller-gen) build_into "controller-gen-$CONTROLLER_TOOLS_VERSION" build_controller_gen ;;
	helm) build_into "helm-$HELM_VERSION" build_helm "r$HELM_RECIPE" ;;
	staticcheck) build_into "staticcheck-$STATICCHECK_VERSION" build_staticcheck ;;
	coredns) build_into "coredns-$COREDNS_VERSION" build_coredns ;;
	versitygw) build_into "versitygw-$VERSITYGW_VERSION" build_versitygw ;;
	prometheus) build_into "prometheus-$PROMETHEUS_VERSION" build_prometheus "r$PROMETHEUS_RECIPE" ;;
	cert-manager) build_into "cert-manager-$CERT_MANAGER_VERSION" build_cert_manager "$(cert_manager_salt)" ;;
	*) log "unknown tool $t"; exit 2 ;;
	esac
done
log "tools ready in $TOOLS_DIR ($(( $(date +%s) - total_start ))s)"
if [[ -x "$TOOLS_DIR/kubernetes-$KUBERNETES_VERSION/kube-apiserver" && -x "$TOOLS_DIR/etcd-$ETCD_DEFAULT_VERSION/etcd" ]]; then
	link_envtest_assets
fi
