package main

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestFlags(t *testing.T) {
	t.Setenv("ETCD_IMAGE_REPOSITORY", "mirror.local/etcd")
	o, err := parseFlags([]string{"--watch-namespace=a, b,,", "--leader-elect"}, &zap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o.imageRepository != "mirror.local/etcd" || !o.leaderElect || o.metricsAddr != ":8080" || o.probeAddr != ":8081" {
		t.Errorf("flags: %+v", o)
	}
	ns := cacheOptions(o.watchNamespaces).DefaultNamespaces
	_, a := ns["a"]
	_, b := ns["b"]
	if len(ns) != 2 || !a || !b {
		t.Errorf("namespaces: %v", ns)
	}
	if cacheOptions("").DefaultNamespaces != nil {
		t.Error("no namespaces must watch all")
	}
}
