package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// Options of an adoption.
type Options struct {
	// BackupFile is where the verified snapshot taken first is written; required unless
	// SkipBackup.
	BackupFile string
	SkipBackup bool
	// Timeout bounds each wait for a deletion.
	Timeout time.Duration
	// StopAfter ends the run after the named step with ErrStopped: the tests' way to kill the
	// tool between two steps. The command line does not offer it.
	StopAfter string
	Out       io.Writer
}

// ErrAdopted: the cluster was adopted by an earlier run; there is nothing left to do.
var ErrAdopted = errors.New("already adopted: the legacy object is gone and the operator manages the cluster")

// ErrStopped is Apply's result when Options.StopAfter stopped it.
var ErrStopped = errors.New("stopped after the requested step")

// BlockedError: the cluster cannot be adopted safely; nothing was changed.
type BlockedError struct{ Findings Findings }

func (e *BlockedError) Error() string { return "adoption blocked:\n" + e.Findings.Blockers() }

// adoption is one run of Apply over one cluster.
type adoption struct {
	env   Env
	opts  Options
	st    *State
	t     *Translation // nil once the legacy object is gone
	names Names
}

// Plan translates what Inspect found; t is nil when only the adopted objects are left.
func Plan(st *State) (*Translation, Names, error) {
	if st.Legacy == nil {
		switch {
		case st.Cluster.Annotations[v1alpha2.AnnotationAdoptedFrom] == "":
			return nil, Names{}, fmt.Errorf("EtcdCluster %s/%s was not adopted from the legacy operator: nothing to migrate", st.Namespace, st.Name)
		case !st.Cluster.Adopting():
			return nil, Names{}, ErrAdopted
		}
		return nil, adoptedNames(st), nil
	}
	t := Translate(st.Input)
	if st.Cluster != nil && st.Cluster.Annotations[v1alpha2.AnnotationAdoptedFrom] != AdoptedFrom(st.Legacy) {
		t.Findings.block("EtcdCluster "+st.Name, "an %s EtcdCluster of that name exists and was not made from this legacy cluster by etcd-migrate", v1alpha2.GroupVersion)
	}
	return &t, legacyNames(st.Legacy, t.Members), nil
}

func legacyNames(l *legacy.EtcdCluster, members []*v1alpha2.EtcdMember) Names {
	n := Names{Namespace: l.Namespace, Cluster: l.Name, StatefulSet: legacy.StatefulSetName(l), ConfigMap: legacy.ConfigMapName(l),
		PDB: legacy.PDBName(l), Headless: legacy.HeadlessServiceName(l), Client: legacy.ClientServiceName(l)}
	for _, m := range members {
		n.Members = append(n.Members, m.Name)
	}
	return n
}

// adoptedNames are the same names read back from the adopted cluster (the legacy operator names
// its StatefulSet, ConfigMap and PDB after the cluster).
func adoptedNames(st *State) Names {
	c := st.Cluster
	n := Names{Namespace: c.Namespace, Cluster: c.Name, StatefulSet: c.Name, ConfigMap: c.Name + "-cluster-state", PDB: c.Name,
		Headless: v1alpha2.HeadlessServiceName(c.Name, c.Spec.Layout), Client: v1alpha2.ClientServiceName(c.Name, c.Spec.Layout)}
	for _, m := range st.Members {
		n.Members = append(n.Members, m.Name)
	}
	return n
}

// Apply adopts the cluster st describes, step by step; see Steps.
func Apply(ctx context.Context, env Env, st *State, opts Options) error {
	t, names, err := Plan(st)
	if err != nil {
		return err
	}
	if t != nil && t.Findings.Blocked() {
		return &BlockedError{Findings: t.Findings}
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	a := &adoption{env: env, opts: opts, st: st, t: t, names: names}
	run := map[string]func(context.Context) (string, error){
		StepBackup: a.backup, StepCreateCluster: a.createCluster, StepCreateMembers: a.createMembers,
		StepOrphanStatefulSet: a.orphanStatefulSet, StepOrphanLegacyCluster: a.orphanLegacyCluster,
		StepRemoveLegacyObjects: a.removeLegacyObjects, StepReownServices: a.reownServices,
		StepReownClaims: a.reownClaims, StepReownPods: a.reownPods, StepHandOver: a.handOver,
	}
	for i, step := range Steps {
		did, err := run[step](ctx)
		if err != nil {
			return fmt.Errorf("step %s: %w", step, err)
		}
		fmt.Fprintf(opts.Out, "%2d/%d %-22s %s\n", i+1, len(Steps), step, did)
		if step == opts.StopAfter {
			return ErrStopped
		}
	}
	return nil
}

func (a *adoption) createCluster(ctx context.Context) (string, error) {
	c := a.st.Cluster
	if c == nil {
		c = a.t.Cluster.DeepCopy()
		status := c.Status
		if err := a.env.Client.Create(ctx, c); err != nil {
			return "", err
		}
		c.Status = status
		if err := a.env.Client.Status().Update(ctx, c); err != nil {
			return "", err
		}
		a.st.Cluster = c
		return "created", nil
	}
	if c.Status.ClusterID != "" || a.t == nil {
		return "exists", nil
	}
	c.Status = a.t.Cluster.Status
	return "status recorded", a.env.Client.Status().Update(ctx, c)
}

func (a *adoption) createMembers(ctx context.Context) (string, error) {
	if a.t == nil {
		return "exist", nil // they were created before the legacy object was deleted
	}
	created := 0
	for _, want := range a.t.Members {
		m := a.member(want.Name)
		if m == nil {
			nm := want.DeepCopy()
			meta := resources.ClusterObjectMeta(a.st.Cluster, nm.Name, "")
			nm.Labels, nm.OwnerReferences = meta.Labels, meta.OwnerReferences
			if err := a.env.Client.Create(ctx, nm); err != nil { // the API server drops the status
				return "", err
			}
			a.st.Members = append(a.st.Members, *nm)
			m = &a.st.Members[len(a.st.Members)-1]
			created++
		}
		if m.Status.MemberID == "" {
			m.Status = want.Status
			if err := a.env.Client.Status().Update(ctx, m); err != nil {
				return "", err
			}
		}
	}
	return fmt.Sprintf("%d created, %d existed", created, len(a.t.Members)-created), nil
}

func (a *adoption) member(name string) *v1alpha2.EtcdMember {
	for i := range a.st.Members {
		if a.st.Members[i].Name == name {
			return &a.st.Members[i]
		}
	}
	return nil
}

func (a *adoption) orphanStatefulSet(ctx context.Context) (string, error) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: a.names.Namespace, Name: a.names.StatefulSet}}
	return a.orphanDelete(ctx, sts)
}

func (a *adoption) orphanLegacyCluster(ctx context.Context) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(legacy.GroupVersion.WithKind("EtcdCluster"))
	u.SetNamespace(a.names.Namespace)
	u.SetName(a.names.Cluster)
	return a.orphanDelete(ctx, u)
}

// orphanDelete deletes obj leaving its dependents, and waits until it is gone: only then has
// the garbage collector released them.
func (a *adoption) orphanDelete(ctx context.Context, obj client.Object) (string, error) {
	err := a.env.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan))
	if meta404(err) {
		return "already gone", nil
	}
	if err != nil {
		return "", err
	}
	key := client.ObjectKeyFromObject(obj)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, a.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		err := a.env.Client.Get(ctx, key, obj)
		return meta404(err), client.IgnoreNotFound(err)
	})
	return "deleted, dependents kept", err
}

func (a *adoption) removeLegacyObjects(ctx context.Context) (string, error) {
	removed := 0
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.names.Namespace, Name: a.names.ConfigMap}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: a.names.Namespace, Name: a.names.PDB}},
	} {
		switch err := a.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", err
		case metav1.IsControlledBy(obj, a.st.Cluster):
			continue // the operator's own budget of the same name
		}
		if err := client.IgnoreNotFound(a.env.Client.Delete(ctx, obj)); err != nil {
			return "", err
		}
		removed++
	}
	return fmt.Sprintf("%d deleted", removed), nil
}

func (a *adoption) reownServices(ctx context.Context) (string, error) {
	owner := resources.ClusterOwnerRef(a.st.Cluster)
	labels := resources.ClusterLabels(a.names.Cluster)
	for _, name := range []string{a.names.Headless, a.names.Client} {
		if err := a.reown(ctx, &corev1.Service{}, name, owner, labels); err != nil {
			return "", err
		}
	}
	return "owned by the EtcdCluster", nil
}

func (a *adoption) reownClaims(ctx context.Context) (string, error) {
	for i := range a.st.Members {
		m := &a.st.Members[i]
		labels := resources.MemberLabels(m.Spec.ClusterName, m.Name, false)
		if err := a.reown(ctx, &corev1.PersistentVolumeClaim{}, v1alpha2.PVCName(m.Name), resources.MemberOwnerRef(m), labels); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d owned by their EtcdMembers", len(a.st.Members)), nil
}

func (a *adoption) reownPods(ctx context.Context) (string, error) {
	for i := range a.st.Members {
		m := &a.st.Members[i]
		labels := resources.MemberLabels(m.Spec.ClusterName, m.Name, true)
		if err := a.reown(ctx, &corev1.Pod{}, m.Name, resources.MemberOwnerRef(m), labels); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d owned by their EtcdMembers", len(a.st.Members)), nil
}

// reown makes owner the only controller of the named object and adds labels; anything else on
// it stays. A merge patch with the resourceVersion fails on a concurrent change instead of
// overwriting it.
func (a *adoption) reown(ctx context.Context, obj client.Object, name string, owner metav1.OwnerReference, labels map[string]string) error {
	if err := a.env.Client.Get(ctx, client.ObjectKey{Namespace: a.names.Namespace, Name: name}, obj); err != nil {
		return fmt.Errorf("%T %s: %w", obj, name, err)
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	var refs []metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if (r.Controller == nil || !*r.Controller) && r.UID != owner.UID {
			refs = append(refs, r)
		}
	}
	obj.SetOwnerReferences(append(refs, owner))
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels)
	obj.SetLabels(l)
	return a.env.Client.Patch(ctx, obj, patch)
}

// handOver releases the members, then the cluster: from then on the operator manages them.
func (a *adoption) handOver(ctx context.Context) (string, error) {
	for i := range a.st.Members {
		if err := a.release(ctx, &a.st.Members[i]); err != nil {
			return "", err
		}
	}
	return "the operator manages the cluster now", a.release(ctx, a.st.Cluster)
}

func (a *adoption) release(ctx context.Context, obj client.Object) error {
	if _, held := obj.GetAnnotations()[v1alpha2.AnnotationAdopting]; !held {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := maps.Clone(obj.GetAnnotations())
	delete(ann, v1alpha2.AnnotationAdopting)
	obj.SetAnnotations(ann)
	return a.env.Client.Patch(ctx, obj, patch)
}
