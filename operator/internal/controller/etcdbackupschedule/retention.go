package etcdbackupschedule

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backup"
)

// applyRetention deletes the snapshots retention no longer keeps; a snapshot a restore reads
// is kept until the restore is over.
func (r *Reconciler) applyRetention(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule, snaps []v1alpha2.EtcdSnapshot, now time.Time) error {
	inUse, err := InUse(ctx, r.Client, bs.Namespace)
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

// InUse are the EtcdSnapshots of a namespace that a restore reads: the source of a cluster
// still bootstrapping from it, or of a rollback that has not finished.
func InUse(ctx context.Context, c client.Reader, ns string) (map[string]bool, error) {
	out := map[string]bool{}
	var clusters v1alpha2.EtcdClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, cl := range clusters.Items {
		if b := cl.Spec.Bootstrap; b != nil && b.Restore != nil && b.Restore.Source.SnapshotRef != nil && cl.Status.ClusterID == "" {
			out[b.Restore.Source.SnapshotRef.Name] = true
		}
	}
	var restores v1alpha2.EtcdRestoreList
	if err := c.List(ctx, &restores, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, er := range restores.Items {
		if ref := er.Spec.Source.SnapshotRef; ref != nil && er.Status.Phase != v1alpha2.RestoreComplete && er.Status.Phase != v1alpha2.RestoreFailed {
			out[ref.Name] = true
		}
	}
	return out, nil
}

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
