// Package resources is the home of every object the operator builds: member Pods and PVCs, the
// cluster's Services and PodDisruptionBudget, EtcdMembers from the cluster's template, the
// cert-manager Certificates, the trust bundle ConfigMaps, and the Secrets the operator owns
// (active TLS copies, its etcd credentials). Labels, owner references and metadata are built
// here and nowhere else. Every function is pure: the same input gives the same object, so
// controllers compare what exists with what should exist, and golden files pin the output.
package resources
