// Package cozystack proves the Cozystack packages as a Cozystack user meets them (build tag e2e),
// on one local cluster whose DNS domain is Cozystack's cozy.local, with cert-manager's controller
// running:
//
//   - the system packages (packages/system/etcd-operator-crds, packages/system/etcd-operator) and
//     the tenant app (packages/extra/etcd, release etcd) are installed with only the values
//     Cozystack passes (_cluster, _namespace); the tenant etcd becomes Available with TLS whose
//     certificates name the members in cozy.local;
//   - the operator package comes as the upgrade of a stand-in for Cozystack's own operator package
//     (testdata/cozystack-etcd-operator: Deployment etcd-operator-controller-manager, electing
//     through the public operator's Lease): while Helm runs both Deployments, never do both
//     operators lead at once, and the package's leads once the old one is gone;
//   - a kube-apiserver, run as Kamaji runs a tenant's (a Pod, --etcd-compaction-interval=0, a client
//     certificate minted from the DataStore's CA key), reaches that etcd through the rendered
//     DataStore and stores what it is given there;
//   - a tenant installed from a stand-in for Cozystack's current etcd app (testdata/, checked
//     against hack/cozypackages' fixture by a unit test without a tag) is upgraded in place to
//     packages/extra/etcd with its values unchanged, while a client writes: the same members,
//     no acknowledged write lost, at most one member down at any moment.
//
// The operator runs as the system package's Pods: the node agents map its image to the operator
// binary built from this tree.
package cozystack
