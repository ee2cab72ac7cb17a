package migrate

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Env is how the tool reaches the cluster: the API server, and etcd through a dialer (a
// port-forward to the member's Pod from a laptop).
type Env struct {
	Client client.Client
	Dial   topology.DialFunc
}

// etcdTimeout bounds each etcd call of the inspection.
const etcdTimeout = 10 * time.Second

// State is what exists of one cluster: the legacy object (nil once the adoption deleted it),
// and this operator's cluster and members (nil and empty before the adoption created them).
type State struct {
	Namespace, Name string
	Legacy          *legacy.EtcdCluster
	Input           Input
	Cluster         *v1alpha2.EtcdCluster
	Members         []v1alpha2.EtcdMember
}

// Inspect reads a legacy cluster, its live etcd and what an earlier run of the tool made of it.
// It changes nothing.
func Inspect(ctx context.Context, env Env, namespace, name string) (*State, error) {
	st := &State{Namespace: namespace, Name: name}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(legacy.GroupVersion.WithKind("EtcdCluster"))
	switch err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); {
	case err == nil:
		l, err := legacy.FromUnstructured(u)
		if err != nil {
			return nil, err
		}
		legacy.Default(l)
		st.Legacy = l
	case !meta404(err):
		return nil, fmt.Errorf("read %s EtcdCluster %s/%s: %w", legacy.GroupVersion, namespace, name, err)
	}
	if err := st.readAdopted(ctx, env.Client); err != nil {
		return nil, err
	}
	if st.Legacy == nil {
		if st.Cluster == nil {
			return nil, fmt.Errorf("no %s EtcdCluster %s/%s to adopt", legacy.GroupVersion, namespace, name)
		}
		return st, nil // an earlier run got past deleting it; the adopted objects say the rest
	}
	in, err := readInput(ctx, env, st.Legacy)
	if err != nil {
		return nil, err
	}
	in.Resuming = st.Cluster != nil && st.Cluster.Annotations[v1alpha2.AnnotationAdoptedFrom] == AdoptedFrom(st.Legacy)
	st.Input = in
	return st, nil
}

// meta404: the legacy CRD is not installed (no such kind), which means no legacy cluster.
func meta404(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err))
}

// readAdopted reads the EtcdCluster and EtcdMembers an earlier run created.
func (st *State) readAdopted(ctx context.Context, c client.Client) error {
	ec := &v1alpha2.EtcdCluster{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: st.Namespace, Name: st.Name}, ec); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	st.Cluster = ec
	list := &v1alpha2.EtcdMemberList{}
	if err := c.List(ctx, list, client.InNamespace(st.Namespace)); err != nil {
		return err
	}
	for _, m := range list.Items {
		if m.Spec.ClusterName == st.Name {
			st.Members = append(st.Members, m)
		}
	}
	return nil
}

func readInput(ctx context.Context, env Env, l *legacy.EtcdCluster) (Input, error) {
	in := Input{Legacy: l, Secrets: map[string]map[string][]byte{}}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: legacy.ConfigMapName(l)}, cm); err == nil {
		in.Token = cm.Data["ETCD_INITIAL_CLUSTER_TOKEN"]
	} else if !apierrors.IsNotFound(err) {
		return in, err
	}
	if err := readSecrets(ctx, env.Client, l, in.Secrets); err != nil {
		return in, err
	}
	live, err := readLive(ctx, env, l, in.Secrets)
	in.Live = live
	return in, err
}

func readSecrets(ctx context.Context, c client.Client, l *legacy.EtcdCluster, out map[string]map[string][]byte) error {
	if l.Spec.Security == nil {
		return nil
	}
	t := l.Spec.Security.TLS
	for _, name := range []string{t.PeerTrustedCASecret, t.PeerSecret, t.ServerTrustedCASecret, t.ServerSecret, t.ClientTrustedCASecret, t.ClientSecret} {
		if name == "" {
			continue
		}
		s := &corev1.Secret{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, s); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			out[name] = s.Data
		}
	}
	return nil
}

// readLive asks etcd for its members through the StatefulSet's Pods, and reads each member's Pod
// and claim.
func readLive(ctx context.Context, env Env, l *legacy.EtcdCluster, secrets map[string]map[string][]byte) (Live, error) {
	cli, err := dialLegacy(ctx, env, l, secrets)
	if err != nil {
		return Live{}, err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	list, err := cli.MemberList(cctx)
	if err != nil {
		return Live{}, fmt.Errorf("etcd member list: %w", err)
	}
	live := Live{ClusterID: list.ClusterID}
	if live.AuthEnabled, err = cli.AuthStatus(cctx); err != nil && !etcd.IsAuthRequired(err) {
		return live, fmt.Errorf("etcd auth status: %w", err)
	}
	for _, m := range list.Members {
		lm, err := readMemberObjects(ctx, env.Client, l, m)
		if err != nil {
			return live, err
		}
		live.Members = append(live.Members, lm)
	}
	return live, nil
}

func readMemberObjects(ctx context.Context, c client.Client, l *legacy.EtcdCluster, m etcd.Member) (LiveMember, error) {
	lm := LiveMember{Member: m}
	if m.Name == "" {
		return lm, nil
	}
	pod := &corev1.Pod{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: m.Name}, pod); {
	case err == nil:
		lm.Pod = pod
	case !apierrors.IsNotFound(err):
		return lm, err
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: legacy.ClaimTemplateName(l) + "-" + m.Name}, pvc); {
	case err == nil:
		lm.PVC = pvc
		if ref := ownerOf(pvc); ref != "" {
			lm.PVCOwner = ref
		}
	case !apierrors.IsNotFound(err):
		return lm, err
	}
	return lm, nil
}

func ownerOf(o client.Object) string {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return r.Kind + "/" + r.Name
		}
	}
	return ""
}

// dialLegacy dials the members the StatefulSet runs, with the legacy operator's client TLS.
func dialLegacy(ctx context.Context, env Env, l *legacy.EtcdCluster, secrets map[string]map[string][]byte) (etcd.Client, error) {
	sts := &appsv1.StatefulSet{}
	replicas := legacy.Replicas(l)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: legacy.StatefulSetName(l)}, sts); err == nil && sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	var endpoints []string
	for i := range int(replicas) {
		endpoints = append(endpoints, legacy.ClientURL(l, i))
	}
	return dialEndpoints(ctx, env, l, secrets, endpoints)
}

func dialEndpoints(ctx context.Context, env Env, l *legacy.EtcdCluster, secrets map[string]map[string][]byte, endpoints []string) (etcd.Client, error) {
	cfg, err := legacyClientTLS(l, secrets)
	if err != nil {
		return nil, err
	}
	return etcdaccess.DialWith(ctx, endpoints, cfg, env.Dial)
}

// legacyClientTLS is the legacy operator's own client: the server CA and clientSecret's pair.
func legacyClientTLS(l *legacy.EtcdCluster, secrets map[string]map[string][]byte) (*tls.Config, error) {
	if !legacy.ServerTLS(l) {
		return nil, nil
	}
	t := l.Spec.Security.TLS
	ca := caOf(secrets[t.ServerSecret])
	if t.ServerTrustedCASecret != "" && len(caOf(secrets[t.ServerTrustedCASecret])) > 0 {
		ca = caOf(secrets[t.ServerTrustedCASecret])
	}
	var pair map[string][]byte
	if t.ClientSecret != "" {
		pair = secrets[t.ClientSecret]
	}
	return tlsmaterial.BuildClientConfig(map[string][]byte{pki.KeyCA: ca}, pair)
}
