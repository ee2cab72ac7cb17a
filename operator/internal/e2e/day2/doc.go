// Package day2 holds the end-to-end tests of day-2 operations (build tag e2e): defragmentation
// (EtcdDefrag) on real etcd members of the local cluster, with the operator's controllers in
// the test binary.
package day2
