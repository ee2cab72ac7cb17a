package legacy_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// cluster is a legacy cluster "test" in namespace "ns1" as stored after the legacy webhook.
func cluster(mutate ...func(*legacy.EtcdCluster)) *legacy.EtcdCluster {
	c := &legacy.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "ns1", UID: "6f1c0d5e-0000-4000-8000-000000000001"},
		Spec:       legacy.EtcdClusterSpec{Replicas: ptr.To[int32](3)},
	}
	for _, m := range mutate {
		m(c)
	}
	legacy.Default(c)
	return c
}

func byoTLS(c *legacy.EtcdCluster) {
	c.Spec.Security = &legacy.SecuritySpec{EnableAuth: true, TLS: legacy.TLSSpec{
		PeerTrustedCASecret: "peer-ca", PeerSecret: "peer-cert",
		ServerTrustedCASecret: "server-ca", ServerSecret: "server-cert",
		ClientTrustedCASecret: "client-ca", ClientSecret: "client-cert",
	}}
}

func customServiceNames(c *legacy.EtcdCluster) {
	c.Spec.HeadlessServiceTemplate = &legacy.EmbeddedMetadataResource{EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{
		Name: "test-peers", Labels: map[string]string{"env": "prod"}, Annotations: map[string]string{"example.com/a": "b"},
	}}
	c.Spec.ServiceTemplate = &legacy.EmbeddedService{
		EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{
			Name: "test-client", Labels: map[string]string{"env": "prod"},
			Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "etcd.example.com"},
		},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "client", Port: 2379, NodePort: 32379}}},
	}
}

func emptyDirSizeLimit(c *legacy.EtcdCluster) {
	c.Spec.Storage.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}
}

func quotaOverride(c *legacy.EtcdCluster) {
	c.Spec.Options = map[string]string{"quota-backend-bytes": "8589934592", "election-timeout": "1000", "enable-v2": "", "experimental-initial-corrupt-check": "true"}
	c.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{}
}

func podTemplateOverrides(c *legacy.EtcdCluster) {
	c.Spec.PodTemplate = legacy.PodTemplate{
		EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{
			Labels: map[string]string{"env": "prod"}, Annotations: map[string]string{"example.com/annotation": "true"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "etcd", Image: "quay.io/coreos/etcd:v3.5.17", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				}},
				{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "infinity"}},
			},
			Volumes:      []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			NodeSelector: map[string]string{"disktype": "ssd"},
		},
	}
	c.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{
		Spec: legacy.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}
}

var goldenCases = map[string]*legacy.EtcdCluster{
	"default":                  cluster(),
	"byo-tls-auth":             cluster(byoTLS),
	"custom-service-names":     cluster(customServiceNames),
	"emptydir-sizelimit":       cluster(emptyDirSizeLimit),
	"options-quota-override":   cluster(quotaOverride),
	"podtemplate-image-labels": cluster(podTemplateOverrides),
}

// renderAll is every object the legacy operator creates, in one YAML stream.
func renderAll(t *testing.T, c *legacy.EtcdCluster) []byte {
	t.Helper()
	client, err := legacy.ClientService(c)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := legacy.StatefulSet(c)
	if err != nil {
		t.Fatal(err)
	}
	objects := []any{legacy.HeadlessService(c), client, legacy.ClusterStateConfigMap(c, legacy.InitialClusterStateNew)}
	if pdb := legacy.PodDisruptionBudget(c); pdb != nil {
		objects = append(objects, pdb)
	}
	objects = append(objects, sts)
	var out bytes.Buffer
	for _, o := range objects {
		raw, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	return out.Bytes()
}

func TestRenderGolden(t *testing.T) {
	for name, c := range goldenCases {
		t.Run(name, func(t *testing.T) {
			got := renderAll(t, c)
			path := filepath.Join("testdata", "render-"+name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs; rerun with -update and review the diff. Got:\n%s", path, got)
			}
		})
	}
}

func TestNamesAndURLs(t *testing.T) {
	c := cluster()
	checks := map[string][2]string{
		"peer URL":      {legacy.PeerURL(c, 0), "https://test-0.test-headless.ns1.svc:2380"},
		"client URL":    {legacy.ClientURL(c, 2), "http://test-2.test-headless.ns1.svc:2379"},
		"token":         {legacy.Token(c), "test-ns1"},
		"PVC":           {legacy.PVCName(c, 1), "data-test-1"},
		"pod":           {legacy.PodName(c, 1), "test-1"},
		"StatefulSet":   {legacy.StatefulSetName(c), "test"},
		"headless":      {legacy.HeadlessServiceName(c), "test-headless"},
		"client":        {legacy.ClientServiceName(c), "test"},
		"ConfigMap":     {legacy.ConfigMapName(c), "test-cluster-state"},
		"PDB":           {legacy.PDBName(c), "test"},
		"image":         {legacy.Image(c), "quay.io/coreos/etcd:v3.5.12"},
		"initial":       {legacy.InitialCluster(c), "test-0=https://test-0.test-headless.ns1.svc:2380,test-1=https://test-1.test-headless.ns1.svc:2380,test-2=https://test-2.test-headless.ns1.svc:2380"},
		"TLS client":    {legacy.ClientURL(cluster(byoTLS), 0), "https://test-0.test-headless.ns1.svc:2379"},
		"custom peer":   {legacy.PeerURL(cluster(customServiceNames), 1), "https://test-1.test-peers.ns1.svc:2380"},
		"custom client": {legacy.ClientServiceName(cluster(customServiceNames)), "test-client"},
		"custom image":  {legacy.Image(cluster(podTemplateOverrides)), "quay.io/coreos/etcd:v3.5.17"},
	}
	for what, gw := range checks {
		if gw[0] != gw[1] {
			t.Errorf("%s: got %q, want %q", what, gw[0], gw[1])
		}
	}
	if !legacy.PeerAutoTLS(c) || legacy.PeerAutoTLS(cluster(byoTLS)) {
		t.Error("PeerAutoTLS wrong")
	}
	if legacy.Replicas(&legacy.EtcdCluster{}) != 3 {
		t.Error("replicas default is not 3")
	}
	want := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "etcd-operator"}
	if !reflect.DeepEqual(legacy.Labels(c), want) {
		t.Errorf("labels %v", legacy.Labels(c))
	}
}

func TestArgsOrder(t *testing.T) {
	common := []string{
		"--name=$(POD_NAME)",
		"--listen-metrics-urls=http://0.0.0.0:2381",
		"--listen-peer-urls=https://0.0.0.0:2380",
	}
	tests := map[string]struct {
		c    *legacy.EtcdCluster
		want []string
	}{
		"auto-TLS peers, plaintext clients": {cluster(), append(slices.Clone(common),
			"--listen-client-urls=http://0.0.0.0:2379",
			"--initial-advertise-peer-urls=https://$(POD_NAME).test-headless.$(POD_NAMESPACE).svc:2380",
			"--data-dir=/var/run/etcd/default.etcd",
			"--advertise-client-urls=http://$(POD_NAME).test-headless.$(POD_NAMESPACE).svc:2379",
			"--peer-auto-tls",
			"--auto-compaction-retention=5m",
			"--snapshot-count=10000",
			"--quota-backend-bytes=4080218931",
		)},
		"bring-your-own TLS": {cluster(byoTLS, quotaOverride), append(slices.Clone(common),
			"--listen-client-urls=https://0.0.0.0:2379",
			"--initial-advertise-peer-urls=https://$(POD_NAME).test-headless.$(POD_NAMESPACE).svc:2380",
			"--data-dir=/var/run/etcd/default.etcd",
			"--advertise-client-urls=https://$(POD_NAME).test-headless.$(POD_NAMESPACE).svc:2379",
			"--peer-trusted-ca-file=/etc/etcd/pki/peer/ca/ca.crt",
			"--peer-cert-file=/etc/etcd/pki/peer/cert/tls.crt",
			"--peer-key-file=/etc/etcd/pki/peer/cert/tls.key",
			"--peer-client-cert-auth",
			"--cert-file=/etc/etcd/pki/server/cert/tls.crt",
			"--key-file=/etc/etcd/pki/server/cert/tls.key",
			"--trusted-ca-file=/etc/etcd/pki/client/ca/ca.crt",
			"--client-cert-auth",
			"--auto-compaction-retention=5m",
			"--snapshot-count=10000",
			// Sorted as whole flags; an empty value is a bare flag; the quota is the user's.
			"--election-timeout=1000",
			"--enable-v2",
			"--experimental-initial-corrupt-check=true",
			"--quota-backend-bytes=8589934592",
		)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := legacy.Args(tt.c); !slices.Equal(got, tt.want) {
				t.Errorf("args\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	tests := map[string]struct {
		c    *legacy.EtcdCluster
		want string // "" when no quota flag is passed
	}{
		"4Gi default claim":       {cluster(), "4080218931"},
		"10Gi claim":              {cluster(func(c *legacy.EtcdCluster) { setStorage(c, "10Gi") }), "10200547328"},
		"emptyDir 1Gi limit":      {cluster(emptyDirSizeLimit), "1020054732"},
		"emptyDir without limit":  {cluster(func(c *legacy.EtcdCluster) { c.Spec.Storage.EmptyDir = &corev1.EmptyDirVolumeSource{} }), ""},
		"option wins":             {cluster(quotaOverride), "8589934592"},
		"empty option is ignored": {cluster(func(c *legacy.EtcdCluster) { c.Spec.Options = map[string]string{"quota-backend-bytes": ""} }), "4080218931"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := legacy.EffectiveOptions(tt.c)[legacy.QuotaOption]; got != tt.want {
				t.Errorf("quota %q, want %q", got, tt.want)
			}
		})
	}
}

func setStorage(c *legacy.EtcdCluster, size string) {
	c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
}

func TestDefault(t *testing.T) {
	c := cluster()
	spec := c.Spec.Storage.VolumeClaimTemplate.Spec
	if !slices.Equal(spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) || spec.Resources.Requests.Storage().String() != "4Gi" {
		t.Errorf("defaults %+v", spec)
	}
	kept := cluster(func(c *legacy.EtcdCluster) { setStorage(c, "1Gi") })
	if got := kept.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests.Storage().String(); got != "1Gi" {
		t.Errorf("request %s, want the given 1Gi", got)
	}
	ed := cluster(emptyDirSizeLimit)
	if ed.Spec.Storage.VolumeClaimTemplate.Spec.AccessModes != nil {
		t.Error("claim template defaulted although emptyDir is set")
	}
}

func TestStatefulSet(t *testing.T) {
	c := cluster(podTemplateOverrides)
	sts, err := legacy.StatefulSet(c)
	if err != nil {
		t.Fatal(err)
	}
	ref := sts.OwnerReferences[0]
	if ref.APIVersion != "etcd.aenix.io/v1alpha1" || ref.Kind != "EtcdCluster" || ref.Name != "test" || ref.UID != c.UID ||
		!*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("owner %+v", ref)
	}
	if sts.Spec.ServiceName != "test-headless" || sts.Spec.PodManagementPolicy != "Parallel" || len(sts.Labels) != 0 {
		t.Errorf("spec %+v, labels %v", sts.Spec, sts.Labels)
	}
	pod := sts.Spec.Template
	if pod.Labels["env"] != "prod" || pod.Labels["app.kubernetes.io/instance"] != "test" || pod.Annotations["example.com/annotation"] != "true" {
		t.Errorf("pod metadata %+v", pod.ObjectMeta)
	}
	names := []string{}
	for _, ct := range pod.Spec.Containers {
		names = append(names, ct.Name)
	}
	etcd := pod.Spec.Containers[0]
	if !slices.Equal(names, []string{"etcd", "sidecar"}) || etcd.Image != "quay.io/coreos/etcd:v3.5.17" ||
		etcd.Resources.Requests.Cpu().String() != "100m" || !slices.Equal(etcd.Args, legacy.Args(c)) || etcd.ReadinessProbe.PeriodSeconds != 5 {
		t.Errorf("containers %v, etcd %+v", names, etcd)
	}
	// The strategic merge puts the template's new volumes before the generated ones.
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].Name != "scratch" || pod.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "data" ||
		pod.Spec.NodeSelector["disktype"] != "ssd" {
		t.Errorf("pod spec %+v", pod.Spec)
	}
	if claims := sts.Spec.VolumeClaimTemplates; len(claims) != 1 || claims[0].Name != "data" {
		t.Errorf("claim templates %+v", claims)
	}
	if ed, _ := legacy.StatefulSet(cluster(emptyDirSizeLimit)); len(ed.Spec.VolumeClaimTemplates) != 0 ||
		ed.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit.String() != "1Gi" {
		t.Errorf("emptyDir: %+v", ed.Spec)
	}
}

func TestTLSVolumes(t *testing.T) {
	sts, err := legacy.StatefulSet(cluster(byoTLS))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // volume -> Secret; the server CA and client cert are not mounted
		"peer-trusted-ca-certificate": "peer-ca", "peer-certificate": "peer-cert",
		"server-certificate": "server-cert", "client-trusted-ca-certificate": "client-ca",
	}
	got := map[string]string{}
	for _, v := range sts.Spec.Template.Spec.Volumes[1:] {
		got[v.Name] = v.Secret.SecretName
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("volumes %v", got)
	}
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts[1:] {
		if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.Name)
		}
	}
}

func TestServicesAndPDB(t *testing.T) {
	c := cluster(customServiceNames)
	headless := legacy.HeadlessService(c)
	if headless.Name != "test-peers" || headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses ||
		headless.Labels["env"] != "prod" || headless.Annotations["example.com/a"] != "b" {
		t.Errorf("headless %+v", headless)
	}
	client, err := legacy.ClientService(c)
	if err != nil {
		t.Fatal(err)
	}
	if client.Name != "test-client" || client.Spec.Type != corev1.ServiceTypeNodePort || len(client.Spec.Ports) != 2 ||
		client.Spec.Ports[0].NodePort != 32379 || client.Spec.Ports[1].Port != 2381 || client.Labels["app.kubernetes.io/name"] != "etcd" {
		t.Errorf("client %+v", client)
	}
	if legacy.PodDisruptionBudget(cluster()) != nil {
		t.Error("PDB without template")
	}
	quorum := legacy.PodDisruptionBudget(cluster(quotaOverride, func(c *legacy.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](5) }))
	if quorum.Spec.MinAvailable.IntValue() != 3 || quorum.Spec.MaxUnavailable != nil {
		t.Errorf("default budget %+v", quorum.Spec)
	}
	given := legacy.PodDisruptionBudget(cluster(podTemplateOverrides))
	if given.Spec.MinAvailable != nil || given.Spec.MaxUnavailable.IntValue() != 1 || *given.Spec.UnhealthyPodEvictionPolicy != "IfHealthyBudget" {
		t.Errorf("given budget %+v", given.Spec)
	}
	cm := legacy.ClusterStateConfigMap(c, legacy.InitialClusterStateExisting)
	if cm.Data["ETCD_INITIAL_CLUSTER_STATE"] != "existing" || cm.Data["ETCD_INITIAL_CLUSTER_TOKEN"] != "test-ns1" {
		t.Errorf("ConfigMap %v", cm.Data)
	}
}

// The builders read the cluster only: etcd-migrate renders from the live object.
func TestRenderDoesNotModifyCluster(t *testing.T) {
	for name, c := range goldenCases {
		before := toJSONMap(t, c)
		renderAll(t, c)
		legacy.EffectiveOptions(c)
		if !reflect.DeepEqual(before, toJSONMap(t, c)) {
			t.Errorf("%s: rendering changed the cluster", name)
		}
	}
}
