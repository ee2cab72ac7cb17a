#!/usr/bin/env bash
# make dev: a local cluster (real control plane, Pods as processes), the CRDs, the operator running
# inside the cluster's network namespace, and a sample 3-member EtcdCluster. Streams the operator's
# log until Ctrl-C, then tears everything down. Needs root (network and mount namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME="${DEV_CLUSTER_NAME:-dev}"
# DEV_REAL_NODES=N adds N real nodes (kubelet + containerd running bin/images, from `make images`)
# beside the 3 node agents; the scheduler spreads the sample's members over both kinds.
REAL_NODES="${DEV_REAL_NODES:-0}"
LC=bin/localcluster
. hack/versions.env
TOOLS_DIR="$(hack/tools.sh --print-dir)"
KUBECTL="$TOOLS_DIR/kubernetes-$KUBERNETES_VERSION/kubectl"

if [[ $(id -u) -ne 0 ]]; then echo "make dev needs root (it creates network and mount namespaces)" >&2; exit 1; fi
hack/e2e-deps.sh

cleanup() {
	trap '' INT TERM # a second Ctrl-C must not interrupt the teardown
	# Without this, errexit ends the trap at the first failing step: `wait` for an operator killed
	# by the kill below returns 143, and the cluster was left to the supervisor's owner check.
	set +e
	echo
	echo "[dev] tearing down local cluster $NAME ..."
	if [[ -n "${OPERATOR_PID:-}" ]]; then
		kill "$OPERATOR_PID" 2>/dev/null
		wait "$OPERATOR_PID" 2>/dev/null
	fi
	"$LC" down --name "$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --owner-pid: should this script be killed outright, the supervisor still tears the cluster down.
"$LC" up --name "$NAME" --nodes 3 --real-nodes "$REAL_NODES" --images-dir "$PWD/bin/images" \
	--nodeagent-bin bin/nodeagent --operator-bin bin/manager --owner-pid $$
KUBECONFIG="$("$LC" kubeconfig --name "$NAME")"
export KUBECONFIG
"$KUBECTL" apply --server-side -f charts/etcd-operator/crds/ >/dev/null
# An operator started before its CRDs are served fails to set up its watches and logs errors
# until they are: wait for the apiserver to serve them first.
"$KUBECTL" wait --for=condition=Established --timeout=60s -f charts/etcd-operator/crds/ >/dev/null
echo "[dev] CRDs installed and served"

# The operator runs as a process inside the cluster's network namespace (so it reaches member Pods
# and cluster DNS) with an in-cluster admin kubeconfig. Its log is for a human here: console
# encoding instead of JSON (not --zap-devel, which would also turn on debug logs and stack traces).
"$LC" exec --name "$NAME" -- bin/manager --leader-elect=false --metrics-bind-address=0 \
	--health-probe-bind-address=127.0.0.1:18081 --etcd-image-repository=quay.io/coreos/etcd \
	--zap-encoder=console &
OPERATOR_PID=$!

"$KUBECTL" apply -f docs/examples/etcdcluster-sample.yaml
REPLICAS="$("$KUBECTL" get etcdcluster/sample -o jsonpath='{.spec.replicas}')"
echo "[dev] waiting for EtcdCluster default/sample to become Available ..."
"$KUBECTL" wait etcdcluster/sample --for=condition=Available --timeout=5m
# Available means quorum, which the first members reach while the others are still joining.
# Ready means every member ready and nothing left in progress.
echo "[dev] waiting for all $REPLICAS members of default/sample to be ready ..."
"$KUBECTL" wait etcdcluster/sample --for=jsonpath='{.status.readyMembers}'="$REPLICAS" --timeout=5m >/dev/null
"$KUBECTL" wait etcdcluster/sample --for=condition=Progressing=False --timeout=5m >/dev/null

# The PATH printed below: kubectl from the tools cache, kubectl-etcd from bin/ (make build), and the
# etcdctl of the sample's etcd version, which `kubectl etcd etcdctl` runs from PATH. Checked here,
# and the plugin run through it once, so every command printed works as printed.
VERSION="$("$KUBECTL" get etcdcluster/sample -o jsonpath='{.spec.version}')"
DEV_PATH="$PWD/bin:$(dirname "$KUBECTL"):$TOOLS_DIR/etcd-v$VERSION"
for tool in kubectl kubectl-etcd etcdctl; do
	if ! PATH="$DEV_PATH" command -v "$tool" >/dev/null; then
		echo "[dev] $tool is not on the PATH printed below ($DEV_PATH): make build and make tools provide it" >&2
		exit 1
	fi
done
if ! out="$(PATH="$DEV_PATH:$PATH" kubectl etcd etcdctl sample -- endpoint health 2>&1)"; then
	echo "[dev] kubectl etcd etcdctl sample -- endpoint health failed through the PATH printed below:" >&2
	echo "$out" >&2
	exit 1
fi

cat <<MSG

[dev] The local cluster "$NAME" is up with a $REPLICAS-member etcd cluster, every member ready. In another shell:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$DEV_PATH:\$PATH    # kubectl, the kubectl-etcd plugin, etcdctl $VERSION
  kubectl get etcdclusters,etcdmembers,pods -o wide
  kubectl etcd status sample
  kubectl etcd etcdctl sample -- put greeting hello
  kubectl etcd etcdctl sample -- get greeting
  kubectl exec \$(kubectl get pods -l etcd-operator.cozystack.io/cluster=sample -o name | head -1) -- \\
      etcdctl --endpoints=http://sample-client:2379 member list -w table
  kubectl scale etcdcluster/sample --replicas=5

The operator's log follows. Ctrl-C stops it and removes the local cluster.
MSG
wait "$OPERATOR_PID"
