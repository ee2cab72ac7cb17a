package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
)

// downgradeFacts are the running members as rollout.DecideDowngrade reads them: each one's
// version, and what its Status this pass said of its storage and the cluster's downgrade (a
// member that did not answer reports no storage version, which holds a downgrade).
func downgradeFacts(st *clusterState) rollout.DowngradeFacts {
	f := rollout.DowngradeFacts{Target: st.cluster.Spec.Version}
	for i := range st.members {
		m := &st.members[i]
		if !m.DeletionTimestamp.IsZero() || m.Status.Version == "" {
			continue
		}
		s := st.etcd.statuses[etcd.ParseID(m.Status.MemberID)]
		f.Members = append(f.Members, rollout.DowngradeMember{Name: m.Name, Version: m.Status.Version,
			StorageVersion: s.StorageVersion, Enabled: s.DowngradeEnabled, EnabledTarget: s.DowngradeTarget})
	}
	return f
}

// errDowngradeNotYet: etcd refuses the target because its cluster version has not caught up
// with the members' (it follows them a few seconds after a rollout ends).
var errDowngradeNotYet = errors.New("etcd's cluster version is not one minor above the target yet")

// enableDowngrade validates and enables etcd's downgrade to the minor before any member
// restarts onto it; etcd then migrates every member's storage.
func (r *Reconciler) enableDowngrade(ctx context.Context, st *clusterState, d rollout.Downgrade) error {
	cli, err := st.etcdClient()
	if err != nil {
		return err
	}
	for _, action := range []string{etcd.DowngradeValidate, etcd.DowngradeEnable} {
		err := cli.Downgrade(ctx, action, d.Minor)
		switch {
		case etcd.IsDowngradeInProcess(err):
			return nil // enabled by an earlier pass; its Status shows next pass
		case etcd.IsDowngradeTargetRefused(err):
			return errDowngradeNotYet
		case err != nil:
			return fmt.Errorf("etcd downgrade %s %s: %w", action, d.Minor, err)
		}
	}
	r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonDowngrading, "EnableDowngrade",
		"etcd's downgrade to %s enabled: the cluster speaks %s from now on; members restart onto it one at a time once every member's storage is migrated", d.Minor, d.Minor)
	return nil
}

// cancelDowngrade ends a downgrade spec.version no longer asks for, before any member restarts
// onto the newer binary.
func (r *Reconciler) cancelDowngrade(ctx context.Context, st *clusterState, d rollout.Downgrade) error {
	cli, err := st.etcdClient()
	if err != nil {
		return err
	}
	if err := cli.Downgrade(ctx, etcd.DowngradeCancel, ""); err != nil && !etcd.IsNoDowngrade(err) {
		return fmt.Errorf("etcd downgrade cancel: %w", err)
	}
	r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonDowngradeCancelled, "CancelDowngrade", "%s: cancelled", d.Message)
	return nil
}

// downgradeGate is the downgrade's part of rollOut, before a member restarts: it enables or
// cancels etcd's downgrade when due, and says why the restart waits ("" when it may go), and
// the minor a downgrade is ready for (VersionSkew's downgradeReady).
func (r *Reconciler) downgradeGate(ctx context.Context, st *clusterState, restartDue bool) (wait, ready string, err error) {
	d := rollout.DecideDowngrade(downgradeFacts(st))
	switch {
	case d.Phase == rollout.DowngradeCancel:
		// Whether or not a restart is due: a cancelled-in-spirit downgrade left enabled keeps
		// the cluster on the older protocol.
		if err := r.cancelDowngrade(ctx, st, d); err != nil {
			return "", "", err
		}
		return d.Message + "; cancelled, restarts follow", "", nil
	case !restartDue:
		return "", "", nil
	case d.Phase == rollout.DowngradeEnable:
		err := r.enableDowngrade(ctx, st, d)
		if errors.Is(err, errDowngradeNotYet) {
			return fmt.Sprintf("waiting to enable etcd's downgrade to %s: %v", d.Minor, err), "", nil
		}
		if err != nil {
			return "", "", err
		}
		return fmt.Sprintf("downgrade to %s enabled; waiting for every member's storage to be migrated", d.Minor), "", nil
	case d.Phase == rollout.DowngradeWaitStorage:
		return d.Message, "", nil
	case d.Phase == rollout.DowngradeReady:
		return "", d.Minor, nil
	}
	return "", "", nil
}
