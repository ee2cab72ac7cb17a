// Package lifecycle holds the end-to-end lifecycle tests (build tag e2e): the two controllers
// run in the test binary against the local cluster of e2e/framework, where member Pods are
// real etcd processes. It lives under operator/internal because Go lets only operator/ import
// the controllers.
package lifecycle
