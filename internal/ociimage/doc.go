// Package ociimage writes the images this repository ships (the operator, etcd per supported
// version, the pause image real nodes use as their sandbox) as OCI image layout tarballs,
// without Docker or a registry, so `ctr -n k8s.io images import` can load them into a real
// node's containerd.
//
// Everything is deterministic: entries sorted, owners numeric, every mtime and the configs'
// creation time at the Unix epoch, layers uncompressed. The same inputs give the same
// digests, so a rebuild of an unchanged image changes nothing a node has imported.
//
// The names are a contract with the local cluster's real nodes and the e2e suites:
// OperatorImage (as the operator chart installs it with no values), EtcdImage (the operator's
// default repository, tag v<version>) and PauseImage (containerd's default sandbox image).
package ociimage
