// Package helm proves the charts on the local cluster (build tag e2e): `helm install` of
// charts/etcd-operator runs the operator as a Pod (the node agent maps its image to the operator
// binary, so it runs with the chart's ServiceAccount token and RBAC), `helm install` of
// charts/etcd with its default TLS (a cert-manager PKI the chart renders; cert-manager's
// controller runs on the cluster) yields an Available 3-member cluster that serves a tenant's
// client over mutual TLS and refuses a plaintext one, deleting the leader's Pod hands the Lease
// to the other operator replica, and `helm uninstall` of both removes every
// object they and the operator made while the CRDs stay. It drives the Helm SDK
// (helm.sh/helm/v4 pkg/action), as `helm` itself would.
//
// The values both installs use are pure builders, checked without a cluster by a unit test
// (no tag) that renders them and resolves the operator image the way the node agent does.
package helm
