package etcdbackupschedule

import (
	"context"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backup"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// applyRetention deletes the snapshots retention no longer keeps; a snapshot a restore reads
// is kept until the restore is over.
func (r *Reconciler) applyRetention(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule, snaps []v1alpha2.EtcdSnapshot, now time.Time) error {
	inUse, err := InUse(ctx, r.Client, bs.Namespace, snaps)
	if err != nil {
		return err
	}
	byName := map[string]*v1alpha2.EtcdSnapshot{}
	infos := make([]backup.Snapshot, 0, len(snaps))
	for i := range snaps {
		s := &snaps[i]
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		byName[s.Name] = s
		infos = append(infos, backup.Snapshot{Name: s.Name, Complete: s.Status.Phase == v1alpha2.SnapshotComplete,
			Failed: s.Status.Phase == v1alpha2.SnapshotFailed, At: finishedAt(s), InUse: inUse[s.Name]})
	}
	for _, name := range backup.Expired(infos, policyOf(bs.Spec.Retention), now) {
		if err := r.Client.Delete(ctx, byName[name]); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.event(bs, corev1.EventTypeNormal, "SnapshotExpired", "Retention", "deleted EtcdSnapshot %s (retention)", name)
	}
	return nil
}

// InUse are the EtcdSnapshots among snaps that a restore reads: the source of a cluster still
// bootstrapping from it, or of a rollback that has not finished, named by reference or by the
// artifact's own S3 key or PVC path.
func InUse(ctx context.Context, c client.Reader, ns string, snaps []v1alpha2.EtcdSnapshot) (map[string]bool, error) {
	var sources []v1alpha2.RestoreSource
	var clusters v1alpha2.EtcdClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, cl := range clusters.Items {
		if b := cl.Spec.Bootstrap; b != nil && b.Restore != nil && cl.Status.ClusterID == "" {
			sources = append(sources, b.Restore.Source)
		}
	}
	var restores v1alpha2.EtcdRestoreList
	if err := c.List(ctx, &restores, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, er := range restores.Items {
		if er.Status.Phase != v1alpha2.RestoreComplete && er.Status.Phase != v1alpha2.RestoreFailed {
			sources = append(sources, er.Spec.Source)
		}
	}
	out := map[string]bool{}
	for i := range snaps {
		for _, src := range sources {
			if reads(src, &snaps[i]) {
				out[snaps[i].Name] = true
			}
		}
	}
	return out, nil
}

// reads: a restore from src reads snapshot s's artifact. Pure.
func reads(src v1alpha2.RestoreSource, s *v1alpha2.EtcdSnapshot) bool {
	if src.SnapshotRef != nil {
		return src.SnapshotRef.Name == s.Name
	}
	art, err := resources.MemberRestoreOf(v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: s.Name}}, s)
	if err != nil {
		return false // not Complete: it has no artifact to read
	}
	a := art.Source
	switch {
	case src.S3 != nil && a.S3 != nil:
		return src.S3.Bucket == a.S3.Bucket && samePath(src.S3.Key, a.S3.Key)
	case src.PVC != nil && a.PVC != nil:
		return src.PVC.ClaimName == a.PVC.ClaimName && samePath(src.PVC.SubPath, a.PVC.SubPath)
	}
	return false
}

// samePath compares keys and paths as the store resolves them (leading and doubled slashes,
// dot segments aside), erring on the side of keeping.
func samePath(a, b string) bool { return path.Clean("/"+a) == path.Clean("/"+b) }

func finishedAt(s *v1alpha2.EtcdSnapshot) time.Time {
	if s.Status.CompletionTime != nil {
		return s.Status.CompletionTime.Time
	}
	return s.CreationTimestamp.Time
}

func policyOf(r v1alpha2.BackupRetention) backup.Policy {
	p := backup.Policy{KeepLast: 3, KeepFailed: 1}
	if r.KeepLast != nil {
		p.KeepLast = int(*r.KeepLast)
	}
	if r.KeepFailed != nil {
		p.KeepFailed = int(*r.KeepFailed)
	}
	if r.MaxAge != nil {
		p.MaxAge = r.MaxAge.Duration
	}
	return p
}
