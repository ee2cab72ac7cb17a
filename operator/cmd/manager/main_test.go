package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	// Secrets are cached only when labelled for a cluster, never all of them.
	for _, w := range []string{"", "a"} {
		by := cacheOptions(w).ByObject
		found := false
		for obj, o := range by {
			if _, ok := obj.(*corev1.Secret); ok && o.Label != nil && !o.Label.Empty() {
				found = true
			}
		}
		if !found {
			t.Errorf("watch %q: Secrets are not restricted by label: %v", w, by)
		}
	}
}

func TestTenantFlags(t *testing.T) {
	o, err := parseFlags([]string{"--enable-tenant-controller", "--tenant-etcd-template=/etc/t.yaml", "--tenant-backup-template=/etc/b.yaml", "--tenant-serve-by-default",
		"--tenant-deletion-policy=Retain", "--tenant-kamaji-default-datastore=", "--cluster-domain=x"}, &zap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := tenantOptions{templateFile: "/etc/t.yaml", backupFile: "/etc/b.yaml", serveByDefault: true, deletionPolicy: "Retain", kamajiDefault: ""}
	if !o.tenantController || o.tenant != want {
		t.Errorf("tenant options %+v, want %+v", o.tenant, want)
	}
	if o, _ := parseFlags([]string{"--cluster-domain=x"}, &zap.Options{}); o.tenantController || o.tenant.deletionPolicy != "Delete" || o.tenant.kamajiDefault != "default" {
		t.Errorf("defaults: enabled %v, policy %q, Kamaji's default DataStore %q", o.tenantController, o.tenant.deletionPolicy, o.tenant.kamajiDefault)
	}
}

func TestClusterDomain(t *testing.T) {
	for conf, want := range map[string]string{
		"search tenant.svc.cozy.local svc.cozy.local cozy.local\nnameserver 10.96.0.10\noptions ndots:5\n": "cozy.local",
		"nameserver 10.96.0.10\nsearch default.svc.cluster.local. svc.cluster.local. cluster.local.\n":     "cluster.local",
		"search example.com\n": "cluster.local",
		"":                     "cluster.local",
	} {
		if got := clusterDomainFrom(conf); got != want {
			t.Errorf("clusterDomainFrom(%q) = %s, want %s", conf, got, want)
		}
	}
	o, err := parseFlags([]string{"--cluster-domain=corp.example"}, &zap.Options{})
	if err != nil || o.clusterDomain != "corp.example" {
		t.Errorf("explicit domain: %v %q", err, o.clusterDomain)
	}
}
