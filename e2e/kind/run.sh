#!/usr/bin/env bash
# End-to-end on a kind cluster, for hosts with Docker (this project's CI machines have none; there the
# local cluster runs the e2e): a kind cluster, cert-manager and Kamaji from the Chartfile.yaml pins, this
# project's operator chart with the tenant controller, then a TenantControlPlane that opts in, waited on
# until Kamaji serves its control plane on the etcd the operator made for it.
#
# Usage: e2e/kind/run.sh [--dry-run] [--keep]
#   --dry-run  print every command instead of running it (what CI checks, with shellcheck)
#   --keep     leave the kind cluster up at the end
# Needs on PATH: docker, kind, helm, kubectl. Environment: KIND_CLUSTER (default etcd-operator-e2e),
# IMAGE (default etcd-operator:kind-e2e), TIMEOUT (default 15m).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=${KIND_CLUSTER:-etcd-operator-e2e}
image=${IMAGE:-etcd-operator:kind-e2e}
timeout=${TIMEOUT:-15m}
dry=false
keep=false
for arg in "$@"; do
	case $arg in
	--dry-run) dry=true ;;
	--keep) keep=true ;;
	*)
		echo "unknown argument $arg (want --dry-run, --keep)" >&2
		exit 2
		;;
	esac
done

# run prints the command, and runs it unless --dry-run.
run() {
	printf '+'
	printf ' %q' "$@"
	printf '\n'
	if [[ $dry == false ]]; then "$@"; fi
}

# pin prints the version Chartfile.yaml requires for chart (repo/name).
pin() {
	awk -v chart="$1" '$1 == "-" && $2 == "chart:" { c = $3 } $1 == "version:" && c == chart { print $2; exit }' "$root/Chartfile.yaml"
}

# repo_url prints the URL Chartfile.yaml gives repository name.
repo_url() {
	awk -v name="$1" '$1 == "-" && $2 == "name:" { n = $3 } $1 == "url:" && n == name { print $2; exit }' "$root/Chartfile.yaml"
}

cert_manager=$(pin jetstack/cert-manager)
kamaji=$(pin clastix/kamaji)
[[ -n $cert_manager && -n $kamaji ]] || {
	echo "Chartfile.yaml pins no jetstack/cert-manager or clastix/kamaji" >&2
	exit 1
}

cleanup() {
	if [[ $keep == false ]]; then run kind delete cluster --name "$cluster"; fi
}

run kind create cluster --name "$cluster" --wait 5m
trap cleanup EXIT

# The operator image: the manager binary (it also runs the snapshot and restore agents).
run docker build -t "$image" -f "$root/Dockerfile" "$root"
run kind load docker-image "$image" --name "$cluster"

run helm repo add jetstack "$(repo_url jetstack)" --force-update
run helm repo add clastix "$(repo_url clastix)" --force-update
run helm upgrade --install cert-manager jetstack/cert-manager --version "$cert_manager" \
	--namespace cert-manager --create-namespace --set crds.enabled=true --wait --timeout "$timeout"
# Kamaji without its bundled etcd and without a default DataStore: every TCP's comes from the operator.
run helm upgrade --install kamaji clastix/kamaji --version "$kamaji" \
	--namespace kamaji-system --create-namespace --set kamaji-etcd.deploy=false --set defaultDatastoreName= \
	--wait --timeout "$timeout"

run helm upgrade --install etcd-operator "$root/charts/etcd-operator" \
	--namespace etcd-operator-system --create-namespace \
	--set image.repository="${image%:*}" --set image.tag="${image##*:}" --set image.pullPolicy=Never \
	--set tenantController.enabled=true --wait --timeout "$timeout"

run kubectl create namespace tenant-a
run kubectl apply -f "$root/e2e/kind/tenantcontrolplane.yaml"
run kubectl -n tenant-a wait tcp/k8s --for=jsonpath='{.metadata.annotations.etcd-operator\.cozystack\.io/tenant-etcd-state}'=Ready --timeout "$timeout"
run kubectl -n tenant-a wait tcp/k8s --for=jsonpath='{.status.kubernetesResources.version.status}'=Ready --timeout "$timeout"
run kubectl -n tenant-a get tcp/k8s etcdcluster/k8s-etcd
run kubectl get datastore tenant-a.k8s

# Deleting the TCP: Kamaji cleans the tenant's keys, then the operator's tenant controller removes the etcd.
run kubectl -n tenant-a delete tcp/k8s --wait --timeout "$timeout"
run kubectl -n tenant-a wait etcdcluster/k8s-etcd --for=delete --timeout "$timeout"
echo "kind e2e passed"
