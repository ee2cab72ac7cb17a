// Package tls proves TLS on the local cluster with the real cert-manager controller: the
// operator emits the Certificates of a full-mTLS cluster with auth, which converges and serves a
// client holding the operator-client certificate (CN=root); a bring-your-own server certificate
// that does not cover a member yields a condition and an Event naming the missing SAN, and no
// Pod, until it is replaced by one that does; client TLS is enabled on a running plaintext
// cluster under writes. On the running mTLS cluster, a forced leaf renewal and an edit of
// spec.tls.certificateTemplate are served by every member on both listeners with no Pod
// restarted (the node agent updates Secret volumes live, as the kubelet does), scaling 3→5→3
// and replacing a member keep working with the same certificates, and a CA rotation under
// continuous writes widens every member's trust before the new certificates are served.
package tls
