package migrate

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// Input is what Inspect read: the legacy cluster, its live etcd and the objects around it.
type Input struct {
	Legacy *legacy.EtcdCluster
	Live   Live
	// Token is ETCD_INITIAL_CLUSTER_TOKEN from the cluster-state ConfigMap ("" when it is gone).
	Token string
	// Secrets are the data of the legacy TLS Secrets that exist, by name.
	Secrets map[string]map[string][]byte
	// Resuming: an earlier run created the EtcdCluster from this legacy cluster, and may have
	// orphaned the Pods already.
	Resuming bool
}

// Live is the running cluster as etcd and the API server report it.
type Live struct {
	ClusterID   uint64
	AuthEnabled bool
	Members     []LiveMember
}

// LiveMember is one etcd member with the Pod and claim of the same name (nil when missing).
type LiveMember struct {
	etcd.Member
	Pod *corev1.Pod
	PVC *corev1.PersistentVolumeClaim
	// PVCOwner is the controller owning the claim, "" for none (the StatefulSet sets none).
	PVCOwner string
}

// Translation is the adopted cluster: the objects to create, their prefilled status, and what
// could not be carried over.
type Translation struct {
	Cluster  *v1alpha2.EtcdCluster
	Members  []*v1alpha2.EtcdMember
	Findings Findings
}

var versionTag = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)$`)

// retention is the pattern spec.options.autoCompactionRetention's schema allows.
var retention = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$|^[0-9]+$`)

// Translate maps a legacy cluster onto this operator's API. It never fails: whatever cannot be
// adopted safely is a blocker finding.
func Translate(in Input) Translation {
	l := in.Legacy
	var fs Findings
	c := &v1alpha2.EtcdCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "EtcdCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace, Annotations: map[string]string{
			v1alpha2.AnnotationAdopting:    Tool,
			v1alpha2.AnnotationAdoptedFrom: AdoptedFrom(l),
		}},
	}
	s := &c.Spec
	s.Replicas = ptr.To(int32(len(in.Live.Members)))
	if want := legacy.Replicas(l); want != int32(len(in.Live.Members)) {
		fs.warn("spec.replicas", "is %d but etcd has %d members; the adopted cluster keeps the %d it has", want, len(in.Live.Members), len(in.Live.Members))
	}
	s.Version, s.ImageRepository = translateImage(legacy.Image(l), &fs)
	translateStorage(l, s, &fs)
	s.Options = translateOptions(l, &fs)
	translatePodTemplate(l, s, &fs)
	translateTLS(l, in.Secrets, s, &fs)
	translateLeftovers(l, &fs)
	s.Layout = &v1alpha2.Layout{
		HeadlessServiceName: legacy.HeadlessServiceName(l),
		ClientServiceName:   legacy.ClientServiceName(l),
		DataDirSubPath:      legacy.DataDirSubPath,
	}
	token := in.Token
	if token == "" {
		token = legacy.Token(l)
	}
	c.Status = v1alpha2.EtcdClusterStatus{
		ClusterID: etcd.FormatID(in.Live.ClusterID), ClusterToken: token,
		ClientTLSServing: legacy.ServerTLS(l), PeerAutoTLS: s.TLS != nil && s.TLS.Peer != nil && s.TLS.Peer.AutoTLS,
	}
	translateAuth(l, in, c, &fs)
	return Translation{Cluster: c, Members: translateMembers(c, in, &fs), Findings: fs}
}

// Tool is the value of v1alpha2.AnnotationAdopting while etcd-migrate holds a cluster.
const Tool = "etcd-migrate"

// AdoptedFrom identifies the legacy object a cluster was adopted from.
func AdoptedFrom(l *legacy.EtcdCluster) string {
	return fmt.Sprintf("%s/EtcdCluster/%s/%s/%s", legacy.GroupVersion.String(), l.Namespace, l.Name, l.UID)
}

// translateImage is the etcd version (the image tag) and the repository when it is not ours.
func translateImage(image string, fs *Findings) (version, repo string) {
	if strings.Contains(image, "@") {
		fs.block("spec.podTemplate.spec.containers[etcd].image", "%s is pinned by digest: the version cannot be read from it", image)
		return "", ""
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		fs.block("spec.podTemplate.spec.containers[etcd].image", "%s has no tag to read the etcd version from", image)
		return "", ""
	}
	m := versionTag.FindStringSubmatch(image[i+1:])
	if m == nil {
		fs.block("spec.podTemplate.spec.containers[etcd].image", "tag %q of %s is not an etcd release (vX.Y.Z)", image[i+1:], image)
		return "", ""
	}
	if repo = image[:i]; repo == v1alpha2.DefaultImageRepository {
		repo = ""
	}
	return m[1], repo
}

func translateStorage(l *legacy.EtcdCluster, s *v1alpha2.EtcdClusterSpec, fs *Findings) {
	if l.Spec.Storage.EmptyDir != nil {
		fs.block("spec.storage.emptyDir", "members keep their data in emptyDir volumes, which no other Pod can take over: nothing to adopt")
		return
	}
	t := l.Spec.Storage.VolumeClaimTemplate
	if name := legacy.ClaimTemplateName(l); name != legacy.DefaultClaimTemplateName {
		fs.block("spec.storage.volumeClaimTemplate.metadata.name", "is %q: the legacy operator's Pods only start with a template named %q", name, legacy.DefaultClaimTemplateName)
	}
	size := t.Spec.Resources.Requests.Storage()
	if size.IsZero() {
		size = &legacy.DefaultStorageSize
	}
	s.Storage = v1alpha2.StorageSpec{Size: *size, StorageClassName: t.Spec.StorageClassName}
	if len(t.Labels)+len(t.Annotations) > 0 {
		fs.warn("spec.storage.volumeClaimTemplate.metadata", "labels and annotations stay on the existing claims; claims of new members get spec.additionalMetadata's")
	}
}

// translateOptions makes the legacy operator's implicit flags explicit (quota, compaction
// retention, snapshot count), or etcd would change behaviour at the first restart.
func translateOptions(l *legacy.EtcdCluster, fs *Findings) *v1alpha2.EtcdOptions {
	opts := legacy.EffectiveOptions(l)
	o := &v1alpha2.EtcdOptions{AutoCompactionRetention: legacy.AutoCompactionRetention}
	o.SnapshotCount = ptr.To[int64](legacy.SnapshotCount)
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v, field := opts[k], "spec.options."+k
		switch k {
		case legacy.QuotaOption:
			o.QuotaBackendBytes = intOption(field, v, fs)
		case "snapshot-count":
			if n := intOption(field, v, fs); n != nil {
				o.SnapshotCount = n
			}
		case "auto-compaction-retention":
			if !retention.MatchString(v) {
				fs.block(field, "%q is not a duration (5m, 1h30m) or a number of hours or revisions", v)
			}
			o.AutoCompactionRetention = v
		case "auto-compaction-mode":
			if v != "periodic" && v != "revision" {
				fs.block(field, "%q is not periodic or revision", v)
			}
			o.AutoCompactionMode = v
		default:
			fs.warn(field, "dropped: the operator has no field for --%s; members it restarts run without it", k)
		}
	}
	return o
}

func intOption(field, v string, fs *Findings) *int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		fs.block(field, "%q is not a non-negative integer", v)
		return nil
	}
	return &n
}

// translatePodTemplate keeps what the operator renders itself and names what it drops.
func translatePodTemplate(l *legacy.EtcdCluster, s *v1alpha2.EtcdClusterSpec, fs *Findings) {
	pt := l.Spec.PodTemplate
	labels := maps.Clone(pt.Labels)
	for k := range legacy.Labels(l) {
		delete(labels, k)
	}
	if len(labels)+len(pt.Annotations) > 0 {
		s.AdditionalMetadata = &v1alpha2.AdditionalMetadata{Labels: labels, Annotations: pt.Annotations}
	}
	ps := pt.Spec.DeepCopy()
	s.Affinity, s.Tolerations, s.NodeSelector = ps.Affinity, ps.Tolerations, ps.NodeSelector
	s.TopologySpreadConstraints, s.ImagePullSecrets, s.PriorityClassName = ps.TopologySpreadConstraints, ps.ImagePullSecrets, ps.PriorityClassName
	ps.Affinity, ps.Tolerations, ps.NodeSelector, ps.TopologySpreadConstraints, ps.ImagePullSecrets, ps.PriorityClassName = nil, nil, nil, nil, nil, ""
	for _, ct := range ps.Containers {
		if ct.Name != legacy.EtcdContainerName {
			fs.warn("spec.podTemplate.spec.containers["+ct.Name+"]", "dropped: the operator runs etcd alone in member Pods")
			continue
		}
		s.Resources = ct.Resources
		ct.Name, ct.Image, ct.Resources = "", "", corev1.ResourceRequirements{}
		if len(setFields(ct)) > 0 {
			fs.warn("spec.podTemplate.spec.containers[etcd]", "fields other than image and resources are dropped (the operator renders the etcd container)")
		}
	}
	ps.Containers = nil
	for _, field := range setFields(ps) {
		fs.warn("spec.podTemplate.spec."+field, "dropped: the operator renders member Pods itself (restricted Pod Security)")
	}
}

// setFields are the JSON names of v's fields that hold something: not null, "", {} or [] (some
// fields have no omitempty, and empty structs are never omitted). A number or boolean that made
// it into JSON was set: the optional ones are pointers.
func setFields(v any) []string {
	m, err := toMap(v)
	if err != nil {
		return []string{"(unreadable: " + err.Error() + ")"}
	}
	var set []string
	for k, val := range m {
		if !zeroJSON(val) {
			set = append(set, k)
		}
	}
	slices.Sort(set)
	return set
}

func zeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if !zeroJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// translateLeftovers names the legacy fields that have no counterpart.
func translateLeftovers(l *legacy.EtcdCluster, fs *Findings) {
	if t := l.Spec.ServiceTemplate; t != nil && (len(t.Labels)+len(t.Annotations) > 0 || len(setFields(t.Spec)) > 0) {
		fs.warn("spec.serviceTemplate", "what it merged onto Service %s stays on the Service; the operator keeps only its selector and client port in step", legacy.ClientServiceName(l))
	}
	if t := l.Spec.HeadlessServiceTemplate; t != nil && len(t.Labels)+len(t.Annotations) > 0 {
		fs.warn("spec.headlessServiceTemplate", "its labels and annotations stay on Service %s", legacy.HeadlessServiceName(l))
	}
	if l.Spec.PodDisruptionBudgetTemplate != nil {
		fs.warn("spec.podDisruptionBudgetTemplate", "dropped: the operator keeps its own budget at the voters' quorum (spec.podDisruptionBudget)")
	}
	if l.Spec.Bootstrap != nil {
		fs.warn("spec.bootstrap", "dropped: it was consumed when the cluster was created")
	}
}

// translateMembers is one EtcdMember per live etcd member, named like its Pod, with its ID,
// peer URLs and Pod recorded, so the operator neither bootstraps nor adds anyone.
func translateMembers(c *v1alpha2.EtcdCluster, in Input, fs *Findings) []*v1alpha2.EtcdMember {
	initial := initialCluster(in.Live.Members)
	var out []*v1alpha2.EtcdMember
	for _, lm := range in.Live.Members {
		if !adoptable(in, lm, fs) {
			continue
		}
		m := &v1alpha2.EtcdMember{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "EtcdMember"},
			ObjectMeta: metav1.ObjectMeta{Name: lm.Name, Namespace: c.Namespace, Annotations: map[string]string{v1alpha2.AnnotationAdopting: Tool}},
			Spec: v1alpha2.EtcdMemberSpec{ClusterName: c.Name, InitialCluster: initial, ClusterToken: c.Status.ClusterToken,
				Replicas: ptr.To[int32](1)},
			Status: v1alpha2.EtcdMemberStatus{MemberID: etcd.FormatID(lm.ID), IsVoter: true, PodName: lm.Pod.Name,
				PodUID: string(lm.Pod.UID), PVCName: lm.PVC.Name, PVCUID: string(lm.PVC.UID)},
		}
		resources.ApplyTemplate(c, &m.Spec, resources.TemplateInputs{ClientTLSServing: c.Status.ClientTLSServing})
		out = append(out, m)
	}
	return out
}

// initialCluster lists every member with its peer URLs exactly as etcd stores them.
func initialCluster(members []LiveMember) string {
	var parts []string
	for _, m := range members {
		for _, u := range m.PeerURLs {
			parts = append(parts, m.Name+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// adoptable checks one live member; each reason it is not is a blocker.
func adoptable(in Input, m LiveMember, fs *Findings) bool {
	l := in.Legacy
	id := etcd.FormatID(m.ID)
	field := "member " + id
	if m.Name != "" {
		field = "member " + m.Name
	}
	ok := true
	block := func(format string, args ...any) { fs.block(field, format, args...); ok = false }
	switch {
	case m.IsLearner:
		block("is a learner: promote or remove it first (adopting would count it as a voter)")
	case m.Name == "":
		block("has never started (no name in etcd): finish or remove it with the legacy operator first")
	}
	if m.Name == "" {
		return false
	}
	switch {
	case m.Pod == nil:
		block("has no Pod %s: the member would be adopted without a process", m.Name)
	case !ownedBy(m.Pod, "StatefulSet", legacy.StatefulSetName(l)) && !ownedBy(m.Pod, "EtcdMember", m.Name) &&
		!(in.Resuming && metav1.GetControllerOf(m.Pod) == nil):
		block("Pod %s is not owned by StatefulSet %s", m.Pod.Name, legacy.StatefulSetName(l))
	case !podReady(m.Pod):
		block("Pod %s is not Ready: adopt a healthy cluster", m.Pod.Name)
	}
	switch {
	case m.PVC == nil:
		block("has no PVC: its data is not on a claim the operator could keep")
	case m.PVCOwner != "" && m.PVCOwner != "EtcdMember/"+m.Name:
		block("PVC %s is controlled by %s", m.PVC.Name, m.PVCOwner)
	}
	return ok
}

func ownedBy(o metav1.Object, kind, name string) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.Kind == kind && ref.Name == name
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// toMap is v's JSON form as a map: which fields are set.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
