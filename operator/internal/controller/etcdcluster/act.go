package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

var errNoEtcd = errors.New("etcd is not reachable")

// certificateNotReady: a new member's TLS Secrets are missing or do not fit it. The member
// controller names the problem on the member (and so in Degraded); nothing is added to etcd.
type certificateNotReady struct{ err error }

func (e certificateNotReady) Error() string { return e.err.Error() }

// act carries out the decided action. Every membership change gets an Event.
func (r *Reconciler) act(ctx context.Context, st *clusterState) error {
	a := st.action
	var err error
	switch a.Kind {
	case membership.None, membership.Wait, membership.AllMembersLost:
		return nil
	case membership.Bootstrap:
		err = r.bootstrap(ctx, st)
	case membership.AddMember:
		err = r.addMember(ctx, st)
	case membership.CompletePending:
		err = r.completePending(ctx, st, st.memberByName(a.Member))
	case membership.Promote:
		err = r.promote(ctx, st, st.memberByName(a.Member), a.ID)
	case membership.MoveLeader:
		err = r.moveLeader(ctx, st, a)
	case membership.RemoveMember, membership.ReplaceMember:
		err = r.deleteMember(ctx, st, a)
	case membership.RemoveStray:
		err = r.removeStray(ctx, st, a.ID)
	case membership.Park, membership.Wake:
		err = r.setDormant(ctx, st, st.memberByName(a.Member), a.Kind == membership.Park)
	case membership.RebuildFromSurvivor:
		err = r.rebuildFromSurvivor(ctx, st)
	case membership.EndForceNewCluster:
		err = r.endForceNewCluster(ctx, st, st.memberByName(a.Member))
	case membership.RestoreLatestSnapshot:
		err = r.restoreLatest(ctx, st)
	default:
		err = fmt.Errorf("unknown action %s", a.Kind)
	}
	var notReady certificateNotReady
	if errors.As(err, &notReady) {
		st.action = membership.Action{Kind: membership.Wait, Reason: v1alpha2.ReasonWaitingForCertificate,
			Message: fmt.Sprintf("a new member is not added to etcd until its certificates fit it: %v", notReady.err)}
		return nil
	}
	st.acted = err == nil
	return err
}

// templateInputs are what the members' template takes from this pass (see resources.TemplateInputs).
func (st *clusterState) templateInputs() resources.TemplateInputs {
	return resources.TemplateInputs{TrustBundle: st.trustBundle, ClientTLSServing: st.status.ClientTLSServing,
		PeerAutoTLS: st.status.PeerAutoTLS}
}

// bootstrap creates the seed (or finishes one created before a crash): create, mark voter,
// then record an initial cluster of itself, after which the member controller starts its Pod.
func (r *Reconciler) bootstrap(ctx context.Context, st *clusterState) error {
	m := st.memberByName(st.action.Member)
	if m == nil {
		restore, err := r.seedRestore(ctx, st.cluster)
		var invalid restoreSourceInvalid
		if errors.As(err, &invalid) {
			r.restoreProblem(st, invalid)
			return nil
		}
		if err != nil {
			return err
		}
		m = resources.NewMember(st.cluster, st.status.ClusterToken, true, restore, st.templateInputs())
		if err := r.createMember(ctx, st, m); err != nil {
			return err
		}
		crashpoint.Hit(crashpoint.SeedCreated)
		r.event(st.cluster, corev1.EventTypeNormal, "SeedCreated", "Bootstrap", "created seed member %s", m.Name)
	}
	if err := r.patchMemberStatus(ctx, m, &v1alpha2.EtcdMemberStatus{IsVoter: true, MemberID: m.Status.MemberID, Version: m.Status.Version}); err != nil {
		return err
	}
	if m.Spec.InitialCluster != "" {
		return nil // recorded before a restart of the operator: keep it
	}
	host, err := r.registrationHost(ctx, m)
	if err != nil {
		return err
	}
	return r.recordInitialCluster(ctx, m, m.Name+"="+resources.NewPeerURL(m, host))
}

// addMember creates a pending member and registers it right away; were the operator to stop
// in between, the next pass finds the pending member and completes it.
func (r *Reconciler) addMember(ctx context.Context, st *clusterState) error {
	m := resources.NewMember(st.cluster, st.status.ClusterToken, false, nil, st.templateInputs())
	if err := r.createMember(ctx, st, m); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.MemberCreated)
	r.event(st.cluster, corev1.EventTypeNormal, "MemberCreated", "ScaleUp", "created member %s", m.Name)
	return r.completePending(ctx, st, m)
}

// completePending: MemberAddAsLearner (unless etcd already has the peer URL), record the ID,
// then record the initial cluster taken from etcd's own member list.
func (r *Reconciler) completePending(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember) error {
	cli, err := st.etcdClient()
	if err != nil || m == nil {
		return errors.Join(err, errMissing(m))
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		return err
	}
	added, ok := topology.FindInList(m, list.Members)
	if !ok {
		host, err := r.registrationHost(ctx, m)
		if err != nil {
			return err
		}
		if added, err = cli.MemberAddAsLearner(ctx, resources.NewPeerURL(m, host)); err != nil {
			return fmt.Errorf("MemberAddAsLearner %s: %w", m.Name, err)
		}
		crashpoint.Hit(crashpoint.LearnerAdded)
		list.Members = append(list.Members, added)
		r.event(st.cluster, corev1.EventTypeNormal, "MemberAdded", "ScaleUp", "added %s to etcd as learner %s", m.Name, etcd.FormatID(added.ID))
	}
	if err := r.patchMemberStatus(ctx, m, &v1alpha2.EtcdMemberStatus{MemberID: etcd.FormatID(added.ID), Version: m.Status.Version}); err != nil {
		return err
	}
	return r.recordInitialCluster(ctx, m, initialCluster(st, m, added.ID, list.Members))
}

// registrationHost is the form of its name the member is registered with, one its certificates
// cover: registration waits for certificates that fit, so a member whose certificate does not
// cover it never becomes a learner without a Pod, nor a seed that cannot start.
func (r *Reconciler) registrationHost(ctx context.Context, m *v1alpha2.EtcdMember) (string, error) {
	host, err := r.TLS.RegistrationHost(ctx, m, r.clusterDomain())
	return host, asCertificateNotReady(err)
}

// checkCertificates gates a restart of the member on the certificates its new Pod will mount.
func (r *Reconciler) checkCertificates(ctx context.Context, m *v1alpha2.EtcdMember) error {
	return asCertificateNotReady(r.TLS.CheckMember(ctx, m, r.clusterDomain()))
}

// asCertificateNotReady tells Secrets that are missing or do not fit from other errors.
func asCertificateNotReady(err error) error {
	var missing *tlsmaterial.MissingSecretError
	if _, invalid := pki.AsValidationError(err); invalid || errors.As(err, &missing) {
		return certificateNotReady{err}
	}
	return err
}

// initialCluster lists etcd's members as name=peerURL, sorted, naming the new member (which
// has not started, so etcd does not know its name yet) after its EtcdMember.
func initialCluster(st *clusterState, m *v1alpha2.EtcdMember, newID uint64, list []etcd.Member) string {
	var entries []string
	for _, e := range list {
		name := e.Name
		if e.ID == newID {
			name = m.Name
		}
		for _, u := range e.PeerURLs {
			entries = append(entries, name+"="+u)
		}
	}
	slices.Sort(entries)
	return strings.Join(entries, ",")
}

func (r *Reconciler) recordInitialCluster(ctx context.Context, m *v1alpha2.EtcdMember, ic string) error {
	if m.Spec.InitialCluster == ic {
		return nil
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.InitialCluster = ic
	return r.Client.Patch(ctx, m, patch)
}

func (r *Reconciler) promote(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember, id uint64) error {
	cli, err := st.etcdClient()
	if err != nil || m == nil {
		return errors.Join(err, errMissing(m))
	}
	if err := cli.MemberPromote(ctx, id); err != nil && !etcd.IsNotLearner(err) {
		return fmt.Errorf("MemberPromote %s: %w", m.Name, err)
	}
	crashpoint.Hit(crashpoint.Promoted)
	r.event(st.cluster, corev1.EventTypeNormal, "MemberPromoted", "ScaleUp", "promoted %s (%s) to voter", m.Name, etcd.FormatID(id))
	return r.patchMemberStatus(ctx, m, &v1alpha2.EtcdMemberStatus{MemberID: etcd.FormatID(id), IsVoter: true, Version: m.Status.Version})
}

func (r *Reconciler) moveLeader(ctx context.Context, st *clusterState, a membership.Action) error {
	cli, err := st.etcdClient()
	if err != nil {
		return err
	}
	if err := cli.MoveLeader(ctx, a.Target); err != nil {
		return fmt.Errorf("MoveLeader to %s: %w", etcd.FormatID(a.Target), err)
	}
	r.event(st.cluster, corev1.EventTypeNormal, "LeaderMoved", "MoveLeader", "%s", a.Message)
	return nil
}

// deleteMember deletes the EtcdMember; its finalizer calls MemberRemove and its PVC follows.
func (r *Reconciler) deleteMember(ctx context.Context, st *clusterState, a membership.Action) error {
	m := st.memberByName(a.Member)
	if m == nil {
		return errMissing(m)
	}
	if err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	crashpoint.Hit(crashpoint.MemberDeleted)
	if a.Kind == membership.ReplaceMember {
		r.event(st.cluster, corev1.EventTypeWarning, v1alpha2.ReasonReplacing, "ReplaceMember", "replacing member %s: %s", m.Name, a.Message)
		return nil
	}
	r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonScalingDown, "ScaleDown", "removing member %s", m.Name)
	return nil
}

func (r *Reconciler) removeStray(ctx context.Context, st *clusterState, id uint64) error {
	cli, err := st.etcdClient()
	if err != nil {
		return err
	}
	if err := cli.MemberRemove(ctx, id); err != nil && !etcd.IsMemberNotFound(err) {
		return fmt.Errorf("MemberRemove stray %s: %w", etcd.FormatID(id), err)
	}
	r.event(st.cluster, corev1.EventTypeWarning, "StrayMemberRemoved", "RemoveMember", "removed etcd member %s that no EtcdMember stands for", etcd.FormatID(id))
	return nil
}

func (r *Reconciler) setDormant(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember, dormant bool) error {
	if m == nil {
		return errMissing(m)
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Dormant = dormant
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return err
	}
	if dormant {
		crashpoint.Hit(crashpoint.Parked)
		r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonPaused, "Pause", "paused: member %s parked, PVC %s kept", m.Name, v1alpha2.PVCName(m.Name))
	} else {
		crashpoint.Hit(crashpoint.Woken)
		r.event(st.cluster, corev1.EventTypeNormal, "Resumed", "Resume", "resuming member %s with its data", m.Name)
	}
	return nil
}

func errMissing(m *v1alpha2.EtcdMember) error {
	if m == nil {
		return errors.New("the member chosen for the action is gone")
	}
	return nil
}
