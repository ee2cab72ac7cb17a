//go:build e2e

package sweep

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const (
	// rollbackPoint is the snapshot every rollback of the scenario returns to.
	rollbackPoint = "point"
	// keptKey is written before rollbackPoint is taken: every rollback keeps it.
	keptKey = "kept"
)

// withPoint takes the snapshot the rollbacks return to (unarmed, before any step), after
// writing keptKey.
func withPoint(setup func(t *testing.T, s *sweep) *subject) func(t *testing.T, s *sweep) *subject {
	return func(t *testing.T, s *sweep) *subject {
		sub := setup(t, s)
		e2eutil.PutGet(t, s.c, sub.ns, sub.name, keptKey, "before the point")
		createSnapshot(t, s, sub, rollbackPoint)
		e2eutil.WaitFor(t, setupTimeout, "snapshot "+rollbackPoint+" Complete", func() bool {
			return snapshotPhase(t, s, sub.ns, rollbackPoint) == v1alpha2.SnapshotComplete
		})
		return sub
	}
}

func snapshotPhase(t *testing.T, s *sweep, ns, name string) v1alpha2.SnapshotPhase {
	snap := &v1alpha2.EtcdSnapshot{}
	if err := s.c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, snap); err != nil {
		t.Fatal(err)
	}
	return snap.Status.Phase
}

func rollbackName(gen int) string { return fmt.Sprintf("rollback-%d", gen) }

// droppedKey is written after the point, before rollback gen: the rollback must drop it.
func droppedKey(gen int) string { return fmt.Sprintf("dropped-%d", gen) }

// rollBack writes a key the rollback must drop, then asks for the rollback to the point.
func rollBack(t *testing.T, s *sweep, sub *subject) {
	sub.gen++
	e2eutil.PutGet(t, s.c, sub.ns, sub.name, droppedKey(sub.gen), "after the point")
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: rollbackName(sub.gen), Namespace: sub.ns},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: sub.name},
			Source: v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: rollbackPoint}}}}
	if err := s.c.Client.Create(context.Background(), er); err != nil {
		t.Fatal(err)
	}
}

// rolledBack: the EtcdRestore is Complete with one Complete safety snapshot, the cluster is
// converged at its size, and etcd holds the point's data: the kept key, not the dropped one.
func rolledBack(t *testing.T, s *sweep, sub *subject) error {
	er := &v1alpha2.EtcdRestore{}
	if err := s.c.Client.Get(context.Background(), client.ObjectKey{Namespace: sub.ns, Name: rollbackName(sub.gen)}, er); err != nil {
		return err
	}
	switch er.Status.Phase {
	case v1alpha2.RestoreComplete:
	case v1alpha2.RestoreFailed:
		t.Fatalf("the rollback failed after the crash: %+v", er.Status.Conditions)
	default:
		return fmt.Errorf("rollback phase %q", er.Status.Phase)
	}
	if err := oneSafetySnapshot(t, s, sub.ns, er.Name); err != nil {
		return err
	}
	if err := converged(t, s, sub); err != nil {
		return err
	}
	return holdsPoint(t, sub)
}

// oneSafetySnapshot: the rollback took exactly one safety snapshot, and it completed.
func oneSafetySnapshot(t *testing.T, s *sweep, ns, restore string) error {
	var list v1alpha2.EtcdSnapshotList
	if err := s.c.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelRestore: restore}); err != nil {
		return err
	}
	if len(list.Items) != 1 || list.Items[0].Status.Phase != v1alpha2.SnapshotComplete {
		return fmt.Errorf("%d safety snapshots of %s (want one, Complete)", len(list.Items), restore)
	}
	return nil
}

// holdsPoint reads the kept and the dropped key (a linearizable read through the subject's client).
func holdsPoint(t *testing.T, sub *subject) error {
	cli, err := sub.client(t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kept, err := cli.Get(ctx, keptKey)
	if err != nil {
		return err
	}
	dropped, err := cli.Get(ctx, droppedKey(sub.gen))
	if err != nil {
		return err
	}
	if len(kept.Kvs) != 1 || len(dropped.Kvs) != 0 {
		return errors.New("etcd does not hold the point's data: " + fmt.Sprintf("kept %d, dropped %d", len(kept.Kvs), len(dropped.Kvs)))
	}
	return nil
}
