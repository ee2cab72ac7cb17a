package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd/etcdtest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

func isConflictOrGone(err error) bool { return apierrors.IsConflict(err) || apierrors.IsNotFound(err) }

func getCluster(t *testing.T, ns, name string) *v1alpha2.EtcdCluster {
	t.Helper()
	c := &v1alpha2.EtcdCluster{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func members(t *testing.T, ns, cluster string) []v1alpha2.EtcdMember {
	t.Helper()
	ms, err := topology.ListMembers(context.Background(), k8s, ns, cluster, "")
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func pod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// podUIDs maps each live Pod in ns (named after its member) to its UID: a new UID is a restart.
func podUIDs(t *testing.T, ns string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			out[p.Name] = string(p.UID)
		}
	}
	return out
}

func pdb(t *testing.T, ns, name string) *policyv1.PodDisruptionBudget {
	t.Helper()
	p := &policyv1.PodDisruptionBudget{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// converged: the cluster reports n ready members, Available=True/QuorumHealthy and nothing
// in progress, and etcd has exactly n voters.
func converged(t *testing.T, ns, name string, n int) func() bool {
	return func() bool {
		c := getCluster(t, ns, name)
		avail := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionAvailable)
		prog := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionProgressing)
		return c.Status.ReadyMembers == int32(n) && avail != nil && avail.Reason == v1alpha2.ReasonQuorumHealthy &&
			prog != nil && prog.Status == "False" && voters(fakeEtcd.Cluster(topology.Key(ns, name))) == n &&
			len(members(t, ns, name)) == n
	}
}

func voters(c *etcdtest.FakeCluster) int {
	n := 0
	for _, m := range c.Members() {
		if !m.IsLearner {
			n++
		}
	}
	return n
}

// assertOneStepAtATime checks the fake's log: every add is followed by its promote (or the
// removal of that same learner) before the next add, and nothing else happens in between.
func assertOneStepAtATime(t *testing.T, ops []string) {
	t.Helper()
	pendingLearner := ""
	for _, op := range ops {
		verb, name, _ := strings.Cut(op, " ")
		switch verb {
		case "add":
			if pendingLearner != "" {
				t.Fatalf("added %s while learner %s was not promoted: %v", name, pendingLearner, ops)
			}
			pendingLearner = name
		case "promote":
			if name != pendingLearner {
				t.Fatalf("promoted %s, expected %s: %v", name, pendingLearner, ops)
			}
			pendingLearner = ""
		case "remove":
			// Removing the unpromoted learner itself (e.g. it lost its data) ends that step;
			// removing anything else while it is pending would be a second change in flight.
			if pendingLearner != "" && name != pendingLearner {
				t.Fatalf("%s while learner %s was not promoted: %v", op, pendingLearner, ops)
			}
			if name == pendingLearner {
				pendingLearner = ""
			}
		default:
			if pendingLearner != "" {
				t.Fatalf("%s while learner %s was not promoted: %v", op, pendingLearner, ops)
			}
		}
	}
}

func count(ops []string, verb string) int {
	return len(slices.DeleteFunc(slices.Clone(ops), func(op string) bool { return !strings.HasPrefix(op, verb+" ") }))
}

// setSecretData replaces a Secret's data, re-reading it on conflict: the operator labels the BYO
// Secrets it follows, so the test's copy goes stale.
func setSecretData(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		s.Data = data
		return k8s.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func authSpec(secret string) *v1alpha2.AuthSpec {
	return &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: secret}}
}

func rootSecret(ns, name, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: password}}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// authLatched: status.authEnabled, auth on in etcd, and root's password is want.
func authLatched(t *testing.T, ns, name, want string) func() bool {
	return func() bool {
		f := fakeEtcd.Cluster(topology.Key(ns, name))
		pw, ok := f.UserPassword(v1alpha2.RootUser)
		return getCluster(t, ns, name).Status.AuthEnabled && f.AuthEnabled() && ok && pw == want
	}
}

// events lists the cluster's Events with reason; none may carry a password.
func events(t *testing.T, ns, name, reason string, secrets ...string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		for _, s := range secrets {
			if strings.Contains(e.Note, s) {
				t.Errorf("Event %s carries a password: %q", e.Reason, e.Note)
			}
		}
		if e.Reason == reason && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}
