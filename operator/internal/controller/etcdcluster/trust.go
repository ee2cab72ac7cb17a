package etcdcluster

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete

// tlsPlane names one plane's Secrets: each source and the active copy members mount.
type tlsPlane struct {
	name   string // "client" or "peer", for Events
	caKey  string // key in the trust bundle ConfigMap
	leaves []leafSecrets
}

type leafSecrets struct{ source, active string }

// loadedPlane is a plane as read this pass.
type loadedPlane struct {
	tlsPlane
	state  trust.Plane
	active []*corev1.Secret // nil where the active copy does not exist yet
}

func tlsPlanes(c *v1alpha2.EtcdCluster) []tlsPlane {
	n := pki.SecretsOf(c)
	var out []tlsPlane
	if n.Server != "" {
		p := tlsPlane{name: "client", caKey: resources.TrustKeyClientCA,
			leaves: []leafSecrets{{n.Server, v1alpha2.ActiveServerSecretName(c.Name)}}}
		if n.OperatorClient != "" {
			p.leaves = append(p.leaves, leafSecrets{n.OperatorClient, v1alpha2.ActiveOperatorClientSecretName(c.Name)})
		}
		out = append(out, p)
	}
	if n.Peer != "" {
		out = append(out, tlsPlane{name: "peer", caKey: resources.TrustKeyPeerCA,
			leaves: []leafSecrets{{n.Peer, v1alpha2.ActivePeerSecretName(c.Name)}}})
	}
	return out
}

// syncTrust moves each TLS plane's active Secrets and trust bundle one step towards the
// plane's sources (package trust decides the step), then makes sure the bundle's ConfigMap
// exists for syncTemplates to hand to the members. A CA rotation thus becomes: widen the
// bundle (a rollout), serve the new certificates (no restart), narrow the bundle (a rollout).
func (r *Reconciler) syncTrust(ctx context.Context, st *clusterState) error {
	st.trustBundle = ""
	planes := tlsPlanes(st.cluster)
	if len(planes) == 0 {
		return nil
	}
	loaded := make([]loadedPlane, len(planes))
	for i, p := range planes {
		lp, err := r.loadPlane(ctx, st, p)
		if err != nil {
			return err
		}
		loaded[i] = lp
	}
	running := podsRunBundle(st, bundleName(st.cluster.Name, loaded))
	for i := range loaded {
		d := trust.Plan(loaded[i].state, running, time.Now())
		if err := r.applyPlane(ctx, st, &loaded[i], d); err != nil {
			return err
		}
	}
	for _, lp := range loaded {
		if lp.state.ActiveCA == nil {
			return nil // a source Secret is not issued yet; members wait for their TLS
		}
	}
	name := bundleName(st.cluster.Name, loaded)
	if err := r.ensureTrustBundle(ctx, st.cluster, name, loaded); err != nil {
		return err
	}
	st.trustBundle = name
	return r.pruneTrustBundles(ctx, st, name)
}

// loadPlane reads a plane's sources and active copies, and checks each source against the
// members its active copy serves well.
func (r *Reconciler) loadPlane(ctx context.Context, st *clusterState, p tlsPlane) (loadedPlane, error) {
	lp := loadedPlane{tlsPlane: p, active: make([]*corev1.Secret, len(p.leaves))}
	lp.state.Leaves = make([]trust.Leaf, len(p.leaves))
	for i, l := range p.leaves {
		src, err := r.TLS.Secret(ctx, st.cluster.Namespace, l.source)
		var missing *tlsmaterial.MissingSecretError
		switch {
		case errors.As(err, &missing):
		case err != nil:
			return lp, err
		default:
			if err := r.watchSecret(ctx, st.cluster, src); err != nil { // a BYO Secret's changes must trigger a pass
				return lp, err
			}
			lp.state.Leaves[i].Source = &trust.Pair{Cert: src.Data[pki.KeyCert], Key: src.Data[pki.KeyKey]}
			lp.state.SourceCA = trust.Merge(lp.state.SourceCA, src.Data[pki.KeyCA])
		}
		act := &corev1.Secret{}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: st.cluster.Namespace, Name: l.active}, act)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return lp, err
		default:
			lp.active[i] = act
			lp.state.Leaves[i].Active = &trust.Pair{Cert: act.Data[pki.KeyCert], Key: act.Data[pki.KeyKey]}
			if lp.state.ActiveCA == nil {
				lp.state.ActiveCA = act.Data[pki.KeyCA]
			}
		}
	}
	if l := &lp.state.Leaves[0]; l.Source != nil && l.Active != nil {
		l.SourceProblem = r.sourceProblem(st, p.name, lp.state, *l)
	}
	return lp, nil
}

// sourceProblem says why a plane's member certificate (leaf 0) must not replace the active
// one: a member the active certificate serves would not be covered by the new one.
func (r *Reconciler) sourceProblem(st *clusterState, plane string, p trust.Plane, l trust.Leaf) string {
	bundle := trust.Merge(p.ActiveCA, p.SourceCA)
	for i := range st.members {
		m := &st.members[i]
		server, peer := tlsmaterial.MemberRequirements(m, r.clusterDomain())
		req := server
		if plane == "peer" {
			req = peer
		}
		if req.What == "" || pki.Validate(l.Active.Cert, p.ActiveCA, req) != nil {
			continue
		}
		if err := pki.Validate(l.Source.Cert, bundle, req); err != nil {
			return err.Error()
		}
	}
	return ""
}

// applyPlane writes a plane's decided step into its active Secrets and reports it.
func (r *Reconciler) applyPlane(ctx context.Context, st *clusterState, lp *loadedPlane, d trust.Decision) error {
	ca := lp.state.ActiveCA
	if d.CA != nil {
		ca = d.CA
	}
	for i, l := range lp.leaves {
		leaf := lp.state.Leaves[i]
		pair := leaf.Active
		if d.Copy[i] {
			pair = leaf.Source
		}
		if pair == nil {
			continue
		}
		if err := r.writeActive(ctx, st.cluster, l.active, lp.active[i], *pair, ca); err != nil {
			return err
		}
		lp.state.Leaves[i].Active = pair
	}
	if ca != nil {
		lp.state.ActiveCA = ca
	}
	if name, ok := trustCrashpoints[d.Kind]; ok {
		crashpoint.Hit(name)
	}
	r.reportTrustStep(st, lp, d)
	return nil
}

// trustCrashpoints are the steps of a rotation, hit once the active Secrets hold them.
var trustCrashpoints = map[trust.Kind]string{
	trust.Widen: crashpoint.TrustWidened, trust.Swap: crashpoint.TrustSwapped, trust.Narrow: crashpoint.TrustNarrowed,
}

func (r *Reconciler) reportTrustStep(st *clusterState, lp *loadedPlane, d trust.Decision) {
	c := st.cluster
	topic := topicHeld + lp.name
	switch d.Kind {
	case trust.Widen:
		r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonTrustWidened, "RotateCA",
			"%s plane: trusting %s; members are restarted onto it one at a time before a certificate from a new CA is served",
			lp.name, trust.Describe(d.CA))
	case trust.Swap:
		r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonCertificateApplied, "ApplyCertificate",
			"%s plane: serving the current certificates of %s; every member already trusts their CA", lp.name, sources(lp))
	case trust.Narrow:
		r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonTrustNarrowed, "RotateCA",
			"%s plane: trusting only %s; members are restarted onto it one at a time", lp.name, trust.Describe(d.CA))
	case trust.Hold:
		if st.memo.due(c, topic, d.Held) {
			r.event(c, corev1.EventTypeWarning, v1alpha2.ReasonCertificateHeld, "ApplyCertificate",
				"%s plane: the new certificate in %s is not served, the previous one stays: %s", lp.name, sources(lp), d.Held)
		}
		return
	}
	st.memo.resolved(topic)
}

func sources(lp *loadedPlane) string {
	names := make([]string, 0, len(lp.leaves))
	for _, l := range lp.leaves {
		names = append(names, "Secret "+l.source)
	}
	return strings.Join(names, ", ")
}

// writeActive creates or updates an active Secret; an unchanged one is not written.
func (r *Reconciler) writeActive(ctx context.Context, c *v1alpha2.EtcdCluster, name string, got *corev1.Secret, pair trust.Pair, ca []byte) error {
	want := resources.ActiveTLSSecret(c, name, pair.Cert, pair.Key, ca)
	if got == nil {
		return r.Client.Create(ctx, want)
	}
	data := want.Data
	if maps.EqualFunc(got.Data, data, bytes.Equal) {
		return nil
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Data = data
	return r.Client.Patch(ctx, got, patch)
}

// ensureTrustBundle creates the bundle's ConfigMap. Its name is its content's hash and it is
// immutable, so a Pod that mounts it loads exactly the CAs its name stands for.
func (r *Reconciler) ensureTrustBundle(ctx context.Context, c *v1alpha2.EtcdCluster, name string, planes []loadedPlane) error {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	cas := map[string]string{}
	for _, p := range planes {
		cas[p.caKey] = string(p.state.ActiveCA)
	}
	cm := resources.TrustBundle(c, name, cas)
	if err := r.Client.Create(ctx, cm); !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// pruneTrustBundles deletes the cluster's bundles that neither the current template nor any Pod uses.
func (r *Reconciler) pruneTrustBundles(ctx context.Context, st *clusterState, current string) error {
	var list corev1.ConfigMapList
	if err := r.Client.List(ctx, &list, client.InNamespace(st.cluster.Namespace), client.MatchingLabels{
		v1alpha2.LabelCluster: st.cluster.Name, v1alpha2.LabelAppComponent: v1alpha2.ComponentTrustBundle}); err != nil {
		return err
	}
	inUse := map[string]bool{current: true}
	for _, pod := range st.pods {
		inUse[mountedBundle(pod)] = true
	}
	for i := range list.Items {
		if cm := &list.Items[i]; !inUse[cm.Name] && metav1.IsControlledBy(cm, st.cluster) {
			if err := r.Client.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// podsRunBundle reports whether every member Pod that is not going away mounts the bundle.
func podsRunBundle(st *clusterState, bundle string) bool {
	for _, pod := range st.pods {
		if pod.DeletionTimestamp.IsZero() && mountedBundle(pod) != bundle {
			return false
		}
	}
	return true
}

func mountedBundle(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil && v.Name == resources.TrustVolume {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// bundleName is the ConfigMap name of the planes' active CAs.
func bundleName(cluster string, planes []loadedPlane) string {
	h := fnv.New64a()
	for _, p := range planes {
		_, _ = h.Write([]byte(p.caKey))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write(p.state.ActiveCA)
		_, _ = h.Write([]byte{0})
	}
	return v1alpha2.TrustBundleName(cluster, strconv.FormatUint(h.Sum64(), 36))
}
