// Package tls proves TLS on the local cluster with the real cert-manager controller: the
// operator emits the Certificates of a full-mTLS cluster, which converges and serves a client
// holding the operator-client certificate; a bring-your-own server certificate that does not
// cover a member yields a condition and an Event naming the missing SAN, and no Pod, until it
// is replaced by one that does. On the running mTLS cluster, a forced leaf renewal and an edit
// of spec.tls.certificateTemplate are served by every member on both listeners with no Pod
// restarted (the node agent updates Secret volumes live, as the kubelet does), and scaling
// 3→5→3 keeps working with the renewed certificates.
package tls
