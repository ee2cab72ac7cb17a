// Package kubectletcd proves the kubectl plugin on the local cluster: the real kubectl finds
// kubectl-etcd on PATH and every verb runs against a 3-member cluster with client mTLS and
// auth, reaching etcd only through port-forwards via the API server; bad input gets its exit
// code.
package kubectletcd
