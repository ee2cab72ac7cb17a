// Package auth proves etcd authentication on the local cluster with real etcd: a cluster with
// auth from the start, auth turned on for a running cluster, a password rotation through the
// Secret, and credentials etcd refuses reported as a condition.
package auth
