#!/usr/bin/env bash
# make dev: a local cluster (real control plane, Pods as processes), the CRDs, the operator running
# inside the cluster's network namespace, and a sample 3-member EtcdCluster. Streams the operator's
# log until Ctrl-C, then tears everything down. Needs root (network and mount namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME="${DEV_CLUSTER_NAME:-dev}"
LC=bin/localcluster
. hack/versions.env
TOOLS_DIR="$(hack/tools.sh --print-dir)"
KUBECTL="$TOOLS_DIR/kubernetes-$KUBERNETES_VERSION/kubectl"

if [[ $(id -u) -ne 0 ]]; then echo "make dev needs root (it creates network and mount namespaces)" >&2; exit 1; fi
hack/e2e-deps.sh

cleanup() {
	trap '' INT TERM # a second Ctrl-C must not interrupt the teardown
	echo
	echo "[dev] tearing down local cluster $NAME ..."
	[[ -n "${OPERATOR_PID:-}" ]] && kill "$OPERATOR_PID" 2>/dev/null && wait "$OPERATOR_PID" 2>/dev/null
	"$LC" down --name "$NAME" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --owner-pid: should this script be killed outright, the supervisor still tears the cluster down.
"$LC" up --name "$NAME" --nodes 3 --nodeagent-bin bin/nodeagent --operator-bin bin/manager --owner-pid $$
KUBECONFIG="$("$LC" kubeconfig --name "$NAME")"
export KUBECONFIG
"$KUBECTL" apply --server-side -f charts/etcd-operator/crds/ >/dev/null
echo "[dev] CRDs installed"

# The operator runs as a process inside the cluster's network namespace (so it reaches member Pods
# and cluster DNS) with an in-cluster admin kubeconfig.
"$LC" exec --name "$NAME" -- bin/manager --leader-elect=false --metrics-bind-address=0 \
	--health-probe-bind-address=127.0.0.1:18081 --etcd-image-repository=quay.io/coreos/etcd &
OPERATOR_PID=$!

"$KUBECTL" apply -f docs/examples/etcdcluster-sample.yaml
echo "[dev] waiting for EtcdCluster default/sample to become Available ..."
"$KUBECTL" wait etcdcluster/sample --for=condition=Available --timeout=5m

cat <<MSG

[dev] The local cluster "$NAME" is up with a 3-member etcd cluster. In another shell:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$(dirname "$KUBECTL"):\$PATH
  kubectl get etcdclusters,etcdmembers,pods -o wide
  kubectl exec \$(kubectl get pods -l etcd-operator.cozystack.io/cluster=sample -o name | head -1) -- \\
      etcdctl --endpoints=http://sample-client:2379 member list -w table
  kubectl scale etcdcluster/sample --replicas=5

The operator's log follows. Ctrl-C stops it and removes the local cluster.
MSG
wait "$OPERATOR_PID"
