package charts_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartrender"
)

const (
	operatorChart     = "etcd-operator"
	operatorRelease   = "etcd-operator"
	operatorNamespace = "etcd-operator-system"
)

var operatorCases = []renderCase{
	{name: "defaults", values: `{}`},
	{name: "monitoring", values: `
metrics:
  serviceMonitor: {enabled: true, labels: {release: prometheus}}
  vmServiceScrape: {enabled: true, interval: 15s, scrapeTimeout: 5s}
alerts:
  prometheusRule: {enabled: true, labels: {release: prometheus}}
  vmRule: {enabled: true}
dashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: etcd}}
`},
	{name: "availability", values: `
replicas: 2
podDisruptionBudget: {enabled: true, maxUnavailable: 50%}
vpa: {enabled: true, updateMode: InPlaceOrRecreate}
deletionProtection: {allowedUsernames: ["system:serviceaccount:kamaji-system:tenant-controller"]}
`},
	{name: "air-gapped", values: `
image: {repository: registry.local/etcd-operator, tag: v0.1.0-rc1, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
etcdImage: {repository: registry.local/etcd}
watchNamespace: tenant-a,tenant-b
metrics: {enabled: false}
deletionProtection: {enabled: false}
`},
	{name: "tenant-controller", values: `
tenantController:
  enabled: true
  serveByDefault: true
  deletionPolicy: Retain
  template: {replicas: 3, version: 3.6.16, storage: {size: 4Gi, storageClassName: fast}}
  backup:
    schedule: "0 */6 * * *"
    snapshotTemplate: {destination: {s3: {endpoint: "https://s3.example.com", bucket: tenants, key: etcd, credentialsSecretRef: {name: tenant-s3}}}}
    retention: {keepLast: 5}
`},
}

var operatorRejects = []rejectCase{
	{name: "replicas as text", values: `replicas: two`, wantErr: []string{"/replicas", "want integer"}},
	{name: "pull policy", values: `image: {pullPolicy: Sometimes}`, wantErr: []string{"/image/pullPolicy", "IfNotPresent"}},
	{name: "unknown key", values: `leaderElect: true`, wantErr: []string{"additional properties 'leaderElect' not allowed"}},
	{name: "vpa mode", values: `vpa: {updateMode: auto}`, wantErr: []string{"/vpa/updateMode"}},
	{name: "tenant deletion policy", values: `tenantController: {deletionPolicy: Orphan}`, wantErr: []string{"/tenantController/deletionPolicy"}},
	{name: "Kamaji's default DataStore", values: `tenantController: {kamajiDefaultDataStore: Default_DS}`, wantErr: []string{"/tenantController/kamajiDefaultDataStore"}},
	{name: "scrape without metrics", values: `metrics: {enabled: false, serviceMonitor: {enabled: true}}`, wantErr: []string{"need metrics.enabled=true"}},
}

func TestOperatorChartRenders(t *testing.T) {
	for _, tc := range operatorCases {
		t.Run(tc.name, func(t *testing.T) {
			ms := render(t, operatorChart, operatorRelease, operatorNamespace, tc.values)
			checkGolden(t, operatorChart, tc.name, ms)
			d := checkDeployment(t, ms)
			checkOperatorSelectors(t, ms, d)
		})
	}
}

// The tenant template's default version is the etcd chart's default version, a supported etcd
// (hack/versions.env): the chart never ships a template the CRD refuses (version is required;
// tenants/controller's TestChartDefaultTemplate applies it) or one a release behind the etcd chart.
func TestTenantTemplateVersion(t *testing.T) {
	values := func(chart string) map[string]any {
		raw, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return parseValues(t, string(raw))
	}
	etcd, _ := values("etcd")["version"].(string)
	tenant, _ := values(operatorChart)["tenantController"].(map[string]any)["template"].(map[string]any)["version"].(string)
	if tenant == "" || tenant != etcd {
		t.Errorf("tenantController.template.version %q, the etcd chart's version %q: they must be equal", tenant, etcd)
	}
	if supported := strings.Fields(pinnedVersion(t, "ETCD_VERSIONS")); !slices.Contains(supported, "v"+etcd) {
		t.Errorf("the etcd chart's version %s is not one of hack/versions.env ETCD_VERSIONS %v", etcd, supported)
	}
}

func TestOperatorChartRejectsBadValues(t *testing.T) {
	for _, tc := range operatorRejects {
		t.Run(tc.name, func(t *testing.T) { checkRejected(t, operatorChart, tc) })
	}
}

// The CRDs ship in crds/ so Helm installs them before the templates and never deletes them.
func TestOperatorChartCRDs(t *testing.T) {
	ms, err := chartrender.RenderManifests(operatorChart, nil, chartrender.Options{Namespace: operatorNamespace, IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, m := range ms {
		if m.Object.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, m.Object.GetName())
		}
	}
	want := []string{"etcdbackupschedules.etcd-operator.cozystack.io", "etcdclusters.etcd-operator.cozystack.io", "etcddefrags.etcd-operator.cozystack.io",
		"etcddefragschedules.etcd-operator.cozystack.io",
		"etcdmembers.etcd-operator.cozystack.io", "etcdrestores.etcd-operator.cozystack.io", "etcdsnapshots.etcd-operator.cozystack.io"}
	if !slices.Equal(crds, want) {
		t.Errorf("CRDs %v, want %v", crds, want)
	}
}

// The ClusterRole is files/rbac/role.yaml (generated from the +kubebuilder:rbac markers) as is,
// and it lets the manager watch every kind the chart ships a CRD for and write its status.
func TestOperatorChartRBAC(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(operatorChart, "files", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, generated); err != nil {
		t.Fatal(err)
	}
	ms, err := chartrender.RenderManifests(operatorChart, nil, chartrender.Options{Namespace: operatorNamespace, IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(one(t, ms, "ClusterRole").Object, role, true); err != nil {
		t.Fatal(err)
	}
	if len(generated.Rules) == 0 || !reflect.DeepEqual(role.Rules, generated.Rules) {
		t.Errorf("rendered ClusterRole rules differ from files/rbac/role.yaml:\n%+v\nwant\n%+v", role.Rules, generated.Rules)
	}
	allows := func(group, resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	crds := objects(ms, "CustomResourceDefinition")
	if len(crds) == 0 {
		t.Fatal("no CRDs rendered")
	}
	for _, m := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, crd); err != nil {
			t.Fatal(err)
		}
		g, plural := crd.Spec.Group, crd.Spec.Names.Plural
		for _, need := range [][2]string{{plural, "get"}, {plural, "list"}, {plural, "watch"}, {plural + "/status", "update"}} {
			if !allows(g, need[0], need[1]) {
				t.Errorf("the ClusterRole does not allow %s on %s.%s", need[1], need[0], g)
			}
		}
	}
}

// checkDeployment decodes the Deployment into the typed struct, refusing unknown fields, and
// checks that the manager runs with the Restricted Pod Security Standard settings.
func checkDeployment(t *testing.T, ms []chartrender.Manifest) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(one(t, ms, "Deployment").Object, d, true); err != nil {
		t.Fatalf("Deployment does not decode: %v", err)
	}
	pod := d.Spec.Template.Spec
	sc := pod.Containers[0].SecurityContext
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 {
		t.Errorf("manager Pod is not Restricted: pod %+v container %+v", pod.SecurityContext, sc)
	}
	// The token goes only where it is needed: the manager's Pod, not every Pod of the account.
	sa := &corev1.ServiceAccount{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(one(t, ms, "ServiceAccount").Object, sa, true); err != nil {
		t.Fatal(err)
	}
	if pod.ServiceAccountName != sa.Name || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken ||
		sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("want the token mounted by the manager Pod only (ServiceAccount %s automount %v, Pod of %s automount %v)",
			sa.Name, sa.AutomountServiceAccountToken, pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	checkAgentImage(t, pod.Containers[0])
	return d
}

// checkAgentImage: snapshot and restore agents run the manager's own binary, so --agent-image is
// the image the manager runs, whatever image.repository and image.tag say.
func checkAgentImage(t *testing.T, manager corev1.Container) {
	t.Helper()
	var agent []string
	for _, a := range manager.Args {
		if v, ok := strings.CutPrefix(a, "--agent-image="); ok {
			agent = append(agent, v)
		}
	}
	if len(agent) != 1 || agent[0] != manager.Image {
		t.Errorf("manager args %v: want exactly one --agent-image=%s (the manager's image)", manager.Args, manager.Image)
	}
}

// checkOperatorSelectors: the PDB and the VPA point at the Deployment, and the scrape objects
// select the metrics Service and only it.
func checkOperatorSelectors(t *testing.T, ms []chartrender.Manifest, d *appsv1.Deployment) {
	podLabels := d.Spec.Template.Labels
	for _, p := range objects(ms, "PodDisruptionBudget") {
		sel, _, _ := unstructured.NestedStringMap(p.Object, "spec", "selector", "matchLabels")
		if !reflect.DeepEqual(sel, d.Spec.Selector.MatchLabels) {
			t.Errorf("PDB selects %v, the Deployment's Pods are %v", sel, podLabels)
		}
	}
	for _, v := range objects(ms, "VerticalPodAutoscaler") {
		if got := str(t, v, "spec", "targetRef", "name"); got != d.Name || str(t, v, "spec", "targetRef", "kind") != "Deployment" {
			t.Errorf("VPA targets %s, want Deployment %s", got, d.Name)
		}
	}
	services := objects(ms, "Service")
	for _, s := range slices.Concat(objects(ms, "ServiceMonitor"), objects(ms, "VMServiceScrape")) {
		sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector", "matchLabels")
		var matched []string
		for _, svc := range services {
			if subset(sel, svc.GetLabels()) {
				matched = append(matched, svc.GetName())
			}
		}
		if len(matched) != 1 || matched[0] != d.Name+"-metrics" {
			t.Errorf("%s selects Services %v, want only %s-metrics", s.GetKind(), matched, d.Name)
		}
	}
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
