// Package backup proves backups, restores and recovery on the local cluster with real etcd, the
// real operator binary, its agent Pods (the operator image run by the node agents) and a real
// S3 server (versitygw, framework.StartS3), on 3-member clusters with client TLS and auth under
// continuous writes: a schedule every minute keeping three; an on-demand snapshot to a PVC;
// restores into new clusters from S3, a PVC and an EtcdSnapshot, each holding every write
// acknowledged up to the snapshot's revision; an encrypted, compressed snapshot whose stored
// object holds none of those writes, restored; a corrupted artifact refused; S3 down and wrong
// credentials reported; the operator and a member killed mid-snapshot; an in-place rollback
// with a client connected through the client Service; and quorum loss recovered from the
// survivor and from the latest snapshot.
package backup
