package etcdcluster

import (
	"context"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// staleRequeue is how soon a pass that found the cache behind this reconciler's own status
// write (or lost its write to a conflict) is retried: the cache catches up in milliseconds.
const staleRequeue = 200 * time.Millisecond

// staleLimit: a cache behind our last write for longer than this is trusted anyway (the
// resourceVersion went backwards, e.g. an API server restored from a backup), so a cluster is
// never parked for good on a number that will not come.
const staleLimit = time.Minute

// Problems whose Event is reported once per occurrence, whatever became of the status write.
const (
	topicAuth        = "auth"
	topicCertManager = "certManager"
	topicAllLost     = "allMembersLost"
	topicRestore     = "restore"
	// topicHeld + plane: a source certificate held back (trust.go); its reason is the problem.
	topicHeld = "held/"
)

// clusterMemo is what the reconciler remembers of one cluster between its passes, in memory
// only: the status it last wrote, and which problems it last reported by an Event. The stored
// status cannot serve for either: the cache may lag behind it, and a write may be refused.
type clusterMemo struct {
	uid types.UID
	// wrote is the resourceVersion our last status write produced, wroteAt when.
	wrote   uint64
	wroteAt time.Time
	// reported is, per topic, the reason last reported ("" once the problem is gone).
	reported map[string]string
	// warnedGen is the generation last checked for an even replica count (0: none yet).
	warnedGen int64
	// created is the EtcdMember the last pass created, until the member cache has it: a pass
	// on a cache without it would decide on one member too few (and create a second seed).
	created string
}

// memo returns the cluster's memo, a fresh one for a new incarnation of the name.
func (r *Reconciler) memo(c *v1alpha2.EtcdCluster) *clusterMemo {
	k := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if v, ok := r.memos.Load(k); ok && v.(*clusterMemo).uid == c.UID {
		return v.(*clusterMemo)
	}
	m := newMemo(c.UID)
	r.memos.Store(k, m)
	return m
}

func newMemo(uid types.UID) *clusterMemo {
	return &clusterMemo{uid: uid, reported: map[string]string{}}
}

func (r *Reconciler) forget(k types.NamespacedName) { r.memos.Delete(k) }

// wroteStatus records the resourceVersion of a successful status write.
func (m *clusterMemo) wroteStatus(resourceVersion string, now time.Time) {
	if rv, err := strconv.ParseUint(resourceVersion, 10, 64); err == nil {
		m.wrote, m.wroteAt = rv, now
	}
}

// cacheBehind: the cached object predates our last status write, so neither its status (the
// base a pass builds on, and the reference that lets an unchanged status go unwritten) nor
// its resourceVersion (a certain conflict) can be used. Pure apart from the clock given.
func cacheBehind(cachedRV string, wrote uint64, wroteAt, now time.Time) bool {
	rv, err := strconv.ParseUint(cachedRV, 10, 64)
	return err == nil && wrote != 0 && rv < wrote && now.Sub(wroteAt) < staleLimit
}

// due reports whether an Event for reason is due under topic: not when the last one reported
// was the same. With nothing in memory (the operator restarted), the stored Degraded condition
// says whether it was reported. The memo is updated as if the Event is emitted.
func (m *clusterMemo) due(c *v1alpha2.EtcdCluster, topic, reason string) bool {
	prev, ok := m.reported[topic]
	if !ok {
		if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionDegraded); d != nil {
			prev = d.Reason
		}
	}
	m.reported[topic] = reason
	return prev != reason
}

// resolved: the topic's problem is gone; its next occurrence is reported again.
func (m *clusterMemo) resolved(topic string) { m.reported[topic] = "" }

// createMember creates m and remembers it until the member cache has it (membersBehind).
func (r *Reconciler) createMember(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember) error {
	if err := r.Client.Create(ctx, m); err != nil {
		return err
	}
	st.memo.created = m.Name
	return nil
}

// membersBehind: the member this reconciler created last is not in the member cache yet,
// though the apiserver has it. Watches of different kinds are not ordered, so a pass woken by
// its own status write can run before the member's create reaches the cache.
func (r *Reconciler) membersBehind(ctx context.Context, c *v1alpha2.EtcdCluster, memo *clusterMemo) (bool, error) {
	if memo.created == "" {
		return false, nil
	}
	key := client.ObjectKey{Namespace: c.Namespace, Name: memo.created}
	err := r.Client.Get(ctx, key, &v1alpha2.EtcdMember{})
	if apierrors.IsNotFound(err) && r.apiReader != nil {
		err = r.apiReader.Get(ctx, key, &v1alpha2.EtcdMember{})
		if err == nil {
			log.FromContext(ctx).V(1).Info("member cache behind our create; looking again", "member", memo.created)
			return true, nil
		}
	}
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	memo.created = "" // cached, or deleted since
	return false, nil
}
