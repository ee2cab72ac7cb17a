// Package tenants proves on the local cluster (build tag e2e) that the tenant controller gives
// a Kamaji TenantControlPlane an etcd a real kube-apiserver runs on: the operator binary runs
// with --enable-tenant-controller, real cert-manager issues the tenant's PKI, the test plays
// Kamaji's etcd driver (the tenant's user and role, a client certificate minted from the
// DataStore's CA) and runs kube-apiserver from the tools cache as a Pod with those flags. A client
// writes through that apiserver while the tenant's etcd is scaled, loses a member, is
// upgraded and has its CA renewed; every acknowledged object must be there afterwards. Then another tenant's
// certificate is refused by this etcd, and deleting the TCP removes what was made for it.
package tenants
