package etcdcluster

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// statusTimeout bounds one member's Status call, so a dead member does not stall the pass.
const statusTimeout = 2 * time.Second

// etcdView is what etcd said this pass. list is nil when the member list could not be read.
type etcdView struct {
	client etcd.Client
	// dialedTLS: client dials the members with TLS.
	dialedTLS bool
	list      *etcd.MemberList
	statuses  map[uint64]etcd.EndpointStatus
	// answered are all the members' Status answers, errors (alarms) included: for metrics.
	answered map[uint64]etcd.EndpointStatus
	leader   uint64
	err      error
}

func (r *Reconciler) loadMembers(ctx context.Context, st *clusterState) error {
	members, err := topology.ListMembers(ctx, r.Client, st.cluster.Namespace, st.cluster.Name, st.cluster.UID)
	if err != nil {
		return err
	}
	st.members = members
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(st.cluster.Namespace),
		client.MatchingLabels(resources.ClusterSelector(st.cluster.Name))); err != nil {
		return err
	}
	st.pods = map[string]*corev1.Pod{}
	for i := range pods.Items {
		st.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	return r.confirmLostPods(ctx, st)
}

// confirmLostPods re-reads, from the apiserver itself, the Pod of a tmpfs member that the cache
// says is gone or replaced: the member's status can name a Pod the Pod cache has not seen yet,
// and mistaking that lag for lost data would replace a healthy new member.
func (r *Reconciler) confirmLostPods(ctx context.Context, st *clusterState) error {
	for i := range st.members {
		m := &st.members[i]
		if pod := st.pods[m.Name]; !topology.PodMayBeLost(m, pod) {
			continue
		}
		live, err := topology.LivePod(ctx, r.apiReader, m)
		if err != nil {
			return err
		}
		if live != nil {
			st.pods[m.Name] = live
		} else {
			delete(st.pods, m.Name)
		}
	}
	return nil
}

// observeEtcd reads the member list and every registered member's status. Failures are part
// of the observation (the cluster may be down), not errors of the pass.
func (r *Reconciler) observeEtcd(ctx context.Context, st *clusterState) error {
	if len(topology.Endpoints(st.members)) == 0 || (st.status.ClusterID == "" && !anyPodReady(st)) {
		// Before the seed serves, a dial would only make cluster DNS cache its name as missing
		// (for seconds) and delay the first contact once it is up.
		return nil
	}
	// A pooled client keeps its auth token: credentials changed in etcd since it logged in
	// show only as refused calls. Log in again once, so that a refusal of the credentials
	// themselves is seen (and root's fallback tried).
	if authErr := r.observeWith(ctx, st, r.Etcd.Dial); authErr != nil && st.cluster.Status.AuthEnabled {
		st.etcd = etcdView{}
		_ = r.observeWith(ctx, st, r.Etcd.Redial)
	}
	return nil
}

// dialRequest asks for the cluster's client as this pass sees it: its members and latches.
func (st *clusterState) dialRequest() etcdaccess.Request {
	latches := etcdaccess.LatchesOf(st.status)
	return etcdaccess.Request{Cluster: st.cluster, Members: st.members, Latches: &latches}
}

// observeWith dials and reads; it returns etcd's refusal of the client's credentials.
func (r *Reconciler) observeWith(ctx context.Context, st *clusterState,
	dial func(context.Context, etcdaccess.Request) (etcdaccess.Conn, error)) error {
	conn, err := dial(ctx, st.dialRequest())
	if err != nil {
		st.etcd.err = err
		r.authFailed(st, err)
		return nil
	}
	cli := conn.Client
	st.etcd.client, st.etcd.dialedTLS, st.auth.asRoot = cli, conn.Target.TLS != nil, conn.AsRoot
	list, err := cli.MemberList(ctx)
	if err != nil {
		st.etcd.err = err
		if etcd.IsAuthRequired(err) && !st.status.AuthEnabled && authcred.Wanted(st.cluster) {
			// etcd has auth on before the latch: a pass that enabled it died before writing
			// status, or the data was restored with auth. Latch; the next pass logs in.
			st.status.AuthEnabled, st.auth.changed = true, true
			return nil
		}
		if etcd.IsAuthRequired(err) && !authcred.Wanted(st.cluster) {
			r.authNotConfigured(st)
			return nil
		}
		if etcd.IsAuthFailed(err) || etcd.IsAuthRequired(err) {
			return err
		}
		return nil
	}
	st.etcd.list = &list
	var authErr error
	st.etcd.statuses, st.etcd.answered, authErr = memberStatuses(ctx, cli, list.Members)
	for _, s := range st.etcd.statuses {
		if s.Leader != 0 {
			st.etcd.leader = s.Leader
			break
		}
	}
	return authErr
}

// alarmPattern finds an alarm in a Status error: etcd lists each raised alarm there as
// "memberID:<id> alarm:<TYPE>". Status is read anyway; the Alarm RPC would be a raft proposal.
var alarmPattern = regexp.MustCompile(`alarm:([A-Z]+)`)

// alarmsOf are the alarm types the members' answers report, each once.
func alarmsOf(answered map[uint64]etcd.EndpointStatus) []string {
	out := []string{}
	for _, s := range answered {
		for _, e := range s.Errors {
			if m := alarmPattern.FindStringSubmatch(e); m != nil && !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	return out
}

// authNotConfigured: etcd has auth on (e.g. data restored from a snapshot taken with auth) but
// spec.auth does not give the operator the root credentials; it cannot manage the cluster.
func (r *Reconciler) authNotConfigured(st *clusterState) {
	c := cond(v1alpha2.ConditionDegraded, true, v1alpha2.ReasonAuthRequiredNotConfigured,
		"etcd has authentication enabled but spec.auth is not configured: set spec.auth.enabled and "+
			"spec.auth.rootCredentialsSecretRef to a Secret with root's password (or spec.auth.passwordlessRoot "+
			"when root has none and the operator's client certificate has CN root)")
	st.auth.problem = &c
	if st.memo.due(st.cluster, topicAuth, c.Reason) {
		r.event(st.cluster, corev1.EventTypeWarning, c.Reason, "Authenticate", "%s", c.Message)
	}
}

// memberStatuses asks every member with a client URL for its status, concurrently: the answers
// without errors (healthy), every answer (answered: errors include raised alarms), and one
// refusal of the client's credentials, if any member refused them.
func memberStatuses(ctx context.Context, cli etcd.Client, members []etcd.Member) (healthy, answered map[uint64]etcd.EndpointStatus, authErr error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out, all := map[uint64]etcd.EndpointStatus{}, map[uint64]etcd.EndpointStatus{}
	for _, m := range members {
		if len(m.ClientURLs) == 0 {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			s, err := cli.Status(cctx, m.ClientURLs[0])
			mu.Lock()
			defer mu.Unlock()
			if etcd.IsAuthFailed(err) || etcd.IsAuthRequired(err) {
				authErr = err
			}
			if err != nil {
				return
			}
			all[m.ID] = s
			if len(s.Errors) == 0 {
				out[m.ID] = s
			}
		})
	}
	wg.Wait()
	return out, all, authErr
}

// discover latches the cluster ID once the seed has formed a one-member cluster by itself.
func (r *Reconciler) discover(_ context.Context, st *clusterState) error {
	if st.status.ClusterID != "" || st.etcd.list == nil || len(st.etcd.list.Members) != 1 {
		return nil
	}
	for i := range st.members {
		m := &st.members[i]
		if !m.Spec.Bootstrap {
			continue
		}
		if _, ok := topology.FindInList(m, st.etcd.list.Members); ok {
			st.status.ClusterID = etcd.FormatID(st.etcd.list.ClusterID)
			r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonClusterDiscovered, "Bootstrap",
				"etcd cluster %s formed by seed %s", st.status.ClusterID, m.Name)
		}
	}
	return nil
}

// syncMemberStatus records on each member what etcd says about it: ID, voter, running version.
func (r *Reconciler) syncMemberStatus(ctx context.Context, st *clusterState) error {
	if st.etcd.list == nil {
		return nil
	}
	for i := range st.members {
		m := &st.members[i]
		found, ok := topology.FindInList(m, st.etcd.list.Members)
		if !ok || !m.DeletionTimestamp.IsZero() {
			continue
		}
		want := m.Status.DeepCopy()
		want.MemberID, want.IsVoter = etcd.FormatID(found.ID), !found.IsLearner
		if s, ok := st.etcd.statuses[found.ID]; ok && s.Version != "" {
			want.Version = s.Version
		}
		if err := r.patchMemberStatus(ctx, m, want); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) patchMemberStatus(ctx context.Context, m *v1alpha2.EtcdMember, want *v1alpha2.EtcdMemberStatus) error {
	if want.MemberID == m.Status.MemberID && want.IsVoter == m.Status.IsVoter && want.Version == m.Status.Version {
		return nil
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Status.MemberID, m.Status.IsVoter, m.Status.Version = want.MemberID, want.IsVoter, want.Version
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, m, patch))
}

// liveVoters counts running members that are voters: the PDB's anchor.
func (st *clusterState) liveVoters() int32 {
	var n int32
	for i := range st.members {
		m := &st.members[i]
		if m.Status.IsVoter && topology.Running(m) {
			n++
		}
	}
	return n
}

func anyPodReady(st *clusterState) bool {
	for _, p := range st.pods {
		if topology.PodReady(p) {
			return true
		}
	}
	return false
}
