// Package realnodes runs the operator where the node agent stands in nowhere (build tag e2e):
// a local cluster of real nodes only (a kubelet and containerd per node, e2e/localcluster's
// --real-nodes), with the OCI images `make images` builds imported into every node. The
// operator is installed by charts/etcd-operator with no values at all, so its Deployment
// names the image the chart ships (pullPolicy IfNotPresent, no registry: the runtime runs the
// imported build); the tenant chart charts/etcd keeps its defaults (a cert-manager PKI, mutual
// TLS) in a namespace that enforces the Restricted Pod Security Standard. One test walks the
// steps a platform team's cluster sees — bootstrap, scaling under writes, Pod loss and a
// container killed by the runtime, a rolling version upgrade, a server certificate re-issued,
// the CA replaced (a new key) under writes, a snapshot to S3 and a restore, tmpfs members and
// their data guard, kubectl etcd and kubectl debug, a node lost — each with its duration logged.
package realnodes
