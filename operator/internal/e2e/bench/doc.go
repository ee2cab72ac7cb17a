// Package bench measures the operator on the local cluster with real etcd and prints a table
// (`make bench`): create->Available for 1, 3 and 5 members, one scale step each way, recovery
// from a member Pod loss (PVC and tmpfs), API writes per idle cluster-minute and the operator's
// RSS with many idle clusters. Numbers, not asserts: timing belongs here, not in the tests.
package bench
