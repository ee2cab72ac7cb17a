package manager

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// surveyRetry spaces the survey's attempts while the API server refuses its lists.
const surveyRetry = 5 * time.Second

// outdatedFunc says whether a member's live Pod runs another template than this build makes
// (etcdmember.Reconciler.Outdated).
type outdatedFunc func(m *v1alpha2.EtcdMember, cluster *v1alpha2.EtcdCluster, live *corev1.Pod) bool

// upgradeSurvey runs once when this operator build starts leading. It counts the members whose
// Pods run another template than this build makes — an operator upgrade that changes what etcd
// runs with, or a rollout under way before the restart — and says so before any of them is
// restarted: one log line for the fleet and an Event per cluster that will roll. Until it has,
// the cluster controller restarts no member (hold). Platform teams read there what an operator
// upgrade is about to do to hundreds of clusters, instead of finding out from their rollouts.
type upgradeSurvey struct {
	client   client.Reader
	recorder events.EventRecorder
	outdated outdatedFunc
	done     atomic.Bool
}

// NeedLeaderElection: only the leader speaks for the fleet and holds its rollouts.
func (s *upgradeSurvey) NeedLeaderElection() bool { return true }

// Start surveys, retrying until the lists succeed (rollouts wait meanwhile; nothing else does).
func (s *upgradeSurvey) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("upgrade-survey")
	for {
		err := s.survey(ctx, logger)
		if err == nil {
			s.done.Store(true)
			return nil
		}
		logger.Error(err, "surveying the members' Pod templates failed; rolling restarts wait for it", "retryIn", surveyRetry)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(surveyRetry):
		}
	}
}

// hold is the cluster controller's RolloutHold: why restarts wait, "" once the survey spoke.
func (s *upgradeSurvey) hold() string {
	if s.done.Load() {
		return ""
	}
	return "the operator has not yet surveyed which members this build restarts"
}

func (s *upgradeSurvey) survey(ctx context.Context, logger logr.Logger) error {
	var clusters v1alpha2.EtcdClusterList
	if err := s.client.List(ctx, &clusters); err != nil {
		return fmt.Errorf("listing EtcdClusters: %w", err)
	}
	var members v1alpha2.EtcdMemberList
	if err := s.client.List(ctx, &members); err != nil {
		return fmt.Errorf("listing EtcdMembers: %w", err)
	}
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.HasLabels{v1alpha2.LabelCluster}); err != nil {
		return fmt.Errorf("listing member Pods: %w", err)
	}
	rolls := toRoll(clusters.Items, members.Items, pods.Items, s.outdated)
	total := 0
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if n := rolls[client.ObjectKeyFromObject(c)]; n > 0 {
			total += n
			s.recorder.Eventf(c, nil, corev1.EventTypeNormal, v1alpha2.ReasonRollingUpdate, "SurveyTemplates",
				"%d member(s) run another Pod template than this operator build makes; they will be restarted one at a time", n)
		}
	}
	if total == 0 {
		logger.Info("this operator build restarts no member: every member Pod runs the template it makes", "clusters", len(clusters.Items))
		return nil
	}
	logger.Info("member Pods run another template than this operator build makes: their clusters will roll them one at a time",
		"clustersToRoll", len(rolls), "membersToRestart", total, "clusters", len(clusters.Items))
	return nil
}

// templated is m as the cluster controller's syncTemplates will make it from the cluster's
// template under this build: a release may change the template as well as the Pod builder. The
// trust bundle is the member's own (syncTrust names the next one only when the CAs change).
func templated(m *v1alpha2.EtcdMember, c *v1alpha2.EtcdCluster) *v1alpha2.EtcdMember {
	out := m.DeepCopy()
	in := resources.TemplateInputs{ClientTLSServing: c.Status.ClientTLSServing, PeerAutoTLS: c.Status.PeerAutoTLS}
	if m.Spec.TLS != nil {
		in.TrustBundle = m.Spec.TLS.TrustBundle
	}
	resources.ApplyTemplate(c, &out.Spec, in)
	return out
}

// toRoll counts, per cluster, the members whose live Pod is outdated under this build. Pods
// being deleted and members without a Pod or a cluster are left out: nothing restarts them.
func toRoll(clusters []v1alpha2.EtcdCluster, members []v1alpha2.EtcdMember, pods []corev1.Pod, outdated outdatedFunc) map[types.NamespacedName]int {
	byName := map[types.NamespacedName]*v1alpha2.EtcdCluster{}
	for i := range clusters {
		byName[client.ObjectKeyFromObject(&clusters[i])] = &clusters[i]
	}
	podOf := map[types.NamespacedName]*corev1.Pod{}
	for i := range pods {
		podOf[client.ObjectKeyFromObject(&pods[i])] = &pods[i]
	}
	out := map[types.NamespacedName]int{}
	for i := range members {
		m := &members[i]
		key := types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.ClusterName}
		c, p := byName[key], podOf[client.ObjectKeyFromObject(m)]
		if c == nil || p == nil || !m.DeletionTimestamp.IsZero() || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if outdated(templated(m, c), c, p) {
			out[key]++
		}
	}
	return out
}
