// Package tls proves TLS on the local cluster with the real cert-manager controller: the
// operator emits the Certificates of a full-mTLS cluster, which converges and serves a client
// holding the operator-client certificate; a bring-your-own server certificate that does not
// cover a member yields a condition and an Event naming the missing SAN, and no Pod, until it
// is replaced by one that does.
package tls
