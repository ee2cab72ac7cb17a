package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// notReadyRecheck is how often a snapshot waiting for its cluster looks again.
const notReadyRecheck = 5 * time.Second

// start admits a Pending snapshot and starts its agent: the cluster exists and is Available,
// the destination and its credentials exist, and the operator knows its own image.
func (r *Reconciler) start(ctx context.Context, s *v1alpha2.EtcdSnapshot) (reconcile.Result, error) {
	if s.Status.Phase == "" {
		return reconcile.Result{}, r.setPhase(ctx, s, v1alpha2.SnapshotPending, v1alpha2.ReasonSnapshotPending, "waiting to start")
	}
	if _, ok := s.Annotations[v1alpha2.AnnotationSuperseded]; ok {
		return reconcile.Result{}, r.fail(ctx, s, v1alpha2.ReasonSuperseded, "a newer scheduled snapshot replaced it before it started")
	}
	c := &v1alpha2.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, c)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, r.fail(ctx, s, v1alpha2.ReasonClusterNotFound, fmt.Sprintf("EtcdCluster %s does not exist", s.Spec.ClusterRef.Name))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if r.AgentImage == "" {
		return reconcile.Result{}, r.fail(ctx, s, v1alpha2.ReasonAgentImageNotConfigured,
			"the operator runs without --agent-image; it cannot start the agent that takes snapshots")
	}
	if reason, msg, err := r.checkDestination(ctx, s); err != nil || reason != "" {
		if err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.fail(ctx, s, reason, msg)
	}
	members, err := topology.ListMembers(ctx, r.Client, c.Namespace, c.Name, c.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	src, wait := AgentSourceOf(c, members)
	if wait != "" {
		return r.waitForCluster(ctx, s, wait)
	}
	return reconcile.Result{}, r.startAgent(ctx, s, c, src)
}

// AgentSourceOf is how the agent reaches the cluster, or why it cannot yet. Ready followers come
// first, so the leader carries no extra load unless it is the only member; learners never serve.
func AgentSourceOf(c *v1alpha2.EtcdCluster, members []v1alpha2.EtcdMember) (resources.AgentSource, string) {
	switch {
	case c.Status.ClusterID == "":
		return resources.AgentSource{}, "the cluster has not formed yet"
	case !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha2.ConditionAvailable):
		return resources.AgentSource{}, "the cluster is not Available"
	case authcred.Wanted(c) && !c.Status.AuthEnabled:
		return resources.AgentSource{}, "etcd auth is being enabled"
	}
	byName := map[string]*v1alpha2.EtcdMember{}
	for i := range members {
		byName[members[i].Name] = &members[i]
	}
	var followers, leaders []v1alpha2.EtcdMember
	for _, ms := range c.Status.Members {
		m := byName[ms.Name]
		if m == nil || !ms.Ready || !topology.Registered(m) || !topology.Running(m) {
			continue
		}
		switch ms.Role {
		case v1alpha2.MemberRoleFollower:
			followers = append(followers, *m)
		case v1alpha2.MemberRoleLeader:
			leaders = append(leaders, *m)
		}
	}
	src := resources.AgentSource{
		Members: append(followers, leaders...),
		TLS:     topology.DialsTLS(c.Spec.TLS, c.Status.ClientTLSServing, members),
		MTLS:    pki.SecretsOf(c).OperatorClient != "",
		Auth:    c.Status.AuthEnabled,
	}
	if len(src.Members) == 0 {
		return src, "no voting member is ready"
	}
	return src, ""
}

func (r *Reconciler) waitForCluster(ctx context.Context, s *v1alpha2.EtcdSnapshot, why string) (reconcile.Result, error) {
	if time.Since(s.CreationTimestamp.Time) > notReadyLimit {
		return reconcile.Result{}, r.fail(ctx, s, v1alpha2.ReasonClusterNotReady,
			fmt.Sprintf("%s for %s; the snapshot was not taken", why, notReadyLimit))
	}
	err := r.setPhase(ctx, s, v1alpha2.SnapshotPending, v1alpha2.ReasonClusterNotReady, why)
	return reconcile.Result{RequeueAfter: notReadyRecheck}, err
}

func (r *Reconciler) startAgent(ctx context.Context, s *v1alpha2.EtcdSnapshot, c *v1alpha2.EtcdCluster, src resources.AgentSource) error {
	pod := resources.SnapshotAgentPod(s, c, src, r.AgentImage)
	if err := r.Client.Create(ctx, pod); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	crashpoint.Hit(crashpoint.SnapshotAgentCreated)
	r.event(s, corev1.EventTypeNormal, v1alpha2.ReasonAgentStarted, "Snapshot",
		"started agent Pod %s; streaming from %s", pod.Name, src.Members[0].Name)
	patch := client.MergeFrom(s.DeepCopy())
	now := metav1.Now()
	s.Status.Phase, s.Status.StartTime = v1alpha2.SnapshotStarted, &now
	meta.SetStatusCondition(&s.Status.Conditions, readyCondition(false, v1alpha2.ReasonAgentStarted,
		fmt.Sprintf("agent Pod %s streams the snapshot", pod.Name), s.Generation))
	return r.Client.Status().Patch(ctx, s, patch)
}

// checkDestination returns the reason and message of a destination that cannot work: a missing
// PVC, S3 credentials whose Secret or keys are missing, or an encryption Secret with no age key
// to encrypt to.
func (r *Reconciler) checkDestination(ctx context.Context, s *v1alpha2.EtcdSnapshot) (string, string, error) {
	err := snapshot.Check(ctx, r.Client, r.TLS, s.Namespace, s.Spec.Destination.S3, s.Spec.Destination.PVC,
		s.Spec.Destination.Encryption, snapshot.KeysToWrite)
	var unusable *snapshot.Unusable
	if errors.As(err, &unusable) {
		return unusable.Reason, unusable.Message, nil
	}
	return "", "", err
}
