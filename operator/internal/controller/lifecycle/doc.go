// Package lifecycle holds the envtest integration tests of the two lifecycle controllers run
// together in one manager against a real kube-apiserver, with etcd replaced by etcdtest.FakeFactory.
package lifecycle
