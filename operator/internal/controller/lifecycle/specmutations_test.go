package lifecycle

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// specMutation draws a value for one field of an EtcdCluster's spec. The values mix what the
// CRD's schema and CEL rules accept with what they refuse, and among the accepted ones what
// the Pods built from them would not pass (requests over limits, a missing PriorityClass):
// the API server must refuse the first kind, the operator must report on the second.
type specMutation func(r *rand.Rand) (what string, set func(*v1alpha2.EtcdClusterSpec))

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

var specMutations = []specMutation{
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		n := int32(r.IntN(8) - 1) // -1 is refused; 0 pauses
		return fmt.Sprintf("replicas=%d", n), func(s *v1alpha2.EtcdClusterSpec) { s.Replicas = &n }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		v := pick(r, "3.5.35", "3.6.16", "3.6.15", "3.7.3", "3.8.0", "4.0.0", "v3.6.16", "3.6", "latest")
		return "version=" + v, func(s *v1alpha2.EtcdClusterSpec) { s.Version = v }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		v := pick(r, nil, ptr.To[int32](0), ptr.To[int32](1), ptr.To[int32](600), ptr.To[int32](-5))
		return "progressDeadlineSeconds=" + show(v), func(s *v1alpha2.EtcdClusterSpec) { s.ProgressDeadlineSeconds = v }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		q := resource.MustParse(pick(r, "512Mi", "1Gi", "2Gi", "3Gi", "10Gi")) // smaller is refused
		return "storage.size=" + q.String(), func(s *v1alpha2.EtcdClusterSpec) { s.Storage.Size = q }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		m := pick(r, v1alpha2.StorageMedium(""), v1alpha2.StorageMedium("Memory")) // immutable
		return fmt.Sprintf("storage.medium=%q", m), func(s *v1alpha2.EtcdClusterSpec) { s.Storage.Medium = m }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		req, lim := pick(r, "", "100m", "2"), pick(r, "", "1", "4") // a request of 2 over a limit of 1: no Pod
		return fmt.Sprintf("resources cpu request %q limit %q", req, lim), func(s *v1alpha2.EtcdClusterSpec) {
			s.Resources = corev1.ResourceRequirements{Requests: quantities(req), Limits: quantities(lim)}
		}
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		md := pick(r, nil, &v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			&v1alpha2.AdditionalMetadata{Labels: map[string]string{"not a key!": "x"}},
			&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "not a value!"}})
		return "additionalMetadata=" + show(md), func(s *v1alpha2.EtcdClusterSpec) { s.AdditionalMetadata = md }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		sel := pick(r, nil, map[string]string{"zone": "a"})
		return fmt.Sprintf("nodeSelector=%v", sel), func(s *v1alpha2.EtcdClusterSpec) { s.NodeSelector = sel }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		ts := pick(r, nil, []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			[]corev1.Toleration{{Key: "k", Operator: "Sometimes"}})
		return fmt.Sprintf("tolerations=%v", ts), func(s *v1alpha2.EtcdClusterSpec) { s.Tolerations = ts }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		p := pick(r, "", "missing-class", "Not_A_Name")
		return fmt.Sprintf("priorityClassName=%q", p), func(s *v1alpha2.EtcdClusterSpec) { s.PriorityClassName = p }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		repo := pick(r, "", "quay.io/coreos/etcd", "registry.local/etcd", "registry.local/etcd:v3", "etcd@sha256:00")
		return fmt.Sprintf("imageRepository=%q", repo), func(s *v1alpha2.EtcdClusterSpec) { s.ImageRepository = repo }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		pdb := pick(r, nil, &v1alpha2.PodDisruptionBudgetSpec{Enabled: ptr.To(true)}, &v1alpha2.PodDisruptionBudgetSpec{Enabled: ptr.To(false)})
		return "podDisruptionBudget=" + show(pdb), func(s *v1alpha2.EtcdClusterSpec) { s.PodDisruptionBudget = pdb }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		q := pick(r, v1alpha2.QuorumLossWait, v1alpha2.QuorumLossRebuildFromSurvivor, v1alpha2.QuorumLossRestoreLatestSnapshot, "Pray")
		return "quorumLoss=" + string(q), func(s *v1alpha2.EtcdClusterSpec) { s.QuorumLoss = q }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		o := pick(r, nil, &v1alpha2.EtcdOptions{}, &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](1 << 30), SnapshotCount: ptr.To[int64](1000)},
			&v1alpha2.EtcdOptions{AutoCompactionMode: "periodic", AutoCompactionRetention: "1h"},
			&v1alpha2.EtcdOptions{AutoCompactionMode: "revision", AutoCompactionRetention: "1000"},
			&v1alpha2.EtcdOptions{AutoCompactionMode: "daily"}, &v1alpha2.EtcdOptions{AutoCompactionRetention: "soon"},
			&v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](-1)}, &v1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](0)})
		return "options=" + show(o), func(s *v1alpha2.EtcdClusterSpec) { s.Options = o }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		ts := pick(r, nil, []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}},
			[]corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}})
		return fmt.Sprintf("topologySpreadConstraints=%v", ts), func(s *v1alpha2.EtcdClusterSpec) { s.TopologySpreadConstraints = ts }
	},
	// Client TLS and auth from Secrets that do not exist yet (healSpec creates them; neither
	// can be removed again; auth is refused without client TLS), and what can never be added
	// to a running cluster.
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		return "tls.client from a Secret not there yet", func(s *v1alpha2.EtcdClusterSpec) {
			s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: fuzzServerSecret}}}
		}
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		return "auth from a Secret not there yet", func(s *v1alpha2.EtcdClusterSpec) { s.Auth = authSpec(fuzzRootSecret) }
	},
	func(r *rand.Rand) (string, func(*v1alpha2.EtcdClusterSpec)) {
		what := pick(r, "layout", "bootstrap", "storageClassName", "peer TLS")
		return what + " added", func(s *v1alpha2.EtcdClusterSpec) {
			switch what {
			case "layout":
				s.Layout = &v1alpha2.Layout{HeadlessServiceName: "other"}
			case "bootstrap":
				s.Bootstrap = &v1alpha2.BootstrapSpec{}
			case "storageClassName":
				s.Storage.StorageClassName = ptr.To("fast")
			default:
				s.TLS = &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}
			}
		}
	},
}

// The Secrets the TLS and auth mutations name; healSpec creates them.
const (
	fuzzServerSecret = fuzzCluster + "-server" // serverSecret's name
	fuzzRootSecret   = fuzzCluster + "-root"
)

// healSpec undoes what the mutations can undo (3 members; no resources, metadata, scheduling
// constraints, image repository or options) and creates the Secrets TLS and auth may name: the
// cluster must converge from wherever they left it.
func healSpec(s *v1alpha2.EtcdClusterSpec) {
	s.Replicas = ptr.To[int32](3)
	s.ProgressDeadlineSeconds, s.Options, s.PodDisruptionBudget = nil, nil, nil
	s.Resources, s.AdditionalMetadata, s.Affinity = corev1.ResourceRequirements{}, nil, nil
	s.NodeSelector, s.Tolerations, s.TopologySpreadConstraints = nil, nil, nil
	s.PriorityClassName, s.ImageRepository, s.QuorumLoss = "", "", v1alpha2.QuorumLossWait
}

// quantities is a CPU quantity, or none for "".
func quantities(cpu string) corev1.ResourceList {
	if cpu == "" {
		return nil
	}
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
}

// show prints what a pointer points to.
func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%+v", *p)
}
