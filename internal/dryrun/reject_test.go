package dryrun

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// The harness must fail where the real apiserver would: each case is one object that a schema,
// a CEL rule or the scope check refuses, with a piece of the message users would see.
func TestRejectionsAreReported(t *testing.T) {
	cases := map[string]struct{ doc, want string }{
		"unknown field in a cert-manager Certificate": {`
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c}
spec: {secretName: s, issuerRef: {name: i}, commonName: x, rotationPolicy: Sometimes}`, `rotationPolicy`},
		"Kamaji DataStore for etcd without the CA key (CEL)": {`
apiVersion: kamaji.clastix.io/v1alpha1
kind: DataStore
metadata: {name: ds}
spec:
  driver: etcd
  endpoints: ["etcd.t.svc:2379"]
  tlsConfig:
    certificateAuthority: {certificate: {secretReference: {name: ca, namespace: t, keyPath: tls.crt}}}
    clientCertificate:
      certificate: {secretReference: {name: c, namespace: t, keyPath: tls.crt}}
      privateKey: {secretReference: {name: c, namespace: t, keyPath: tls.key}}`, `certificateAuthority privateKey must have secretReference or content`},
		"VPA with an unknown update mode": {`
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: v}
spec:
  targetRef: {apiVersion: etcd-operator.cozystack.io/v1alpha2, kind: EtcdCluster, name: etcd}
  updatePolicy: {updateMode: Sometimes}`, `updateMode`},
		"HelmRelease without a chart": {`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: h}
spec: {interval: 5m}`, `chart or chartRef must be set`},
		"ServiceMonitor with a misspelt field": {`
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: s}
spec: {selector: {}, endpoint: [{port: metrics}]}`, `endpoint`},
		"VMServiceScrape with a misspelt endpoint field": {`
apiVersion: operator.victoriametrics.com/v1beta1
kind: VMServiceScrape
metadata: {name: s}
spec: {selector: {}, endpoints: [{port: metrics, intervall: 30s}]}`, `intervall`},
		"VMServiceScrape without endpoints": {`
apiVersion: operator.victoriametrics.com/v1beta1
kind: VMServiceScrape
metadata: {name: s}
spec: {selector: {matchLabels: {a: b}}}`, `endpoints`},
		"EtcdCluster with negative replicas": {`
apiVersion: etcd-operator.cozystack.io/v1alpha2
kind: EtcdCluster
metadata: {name: e}
spec: {replicas: -1, version: "3.6.16", storage: {size: 1Gi}}`, `replicas`},
		"kind without a CRD": {`
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}`, `no CRD for example.com/v1, Kind=Widget`},
		"namespace on a cluster-scoped DataStore": {`
apiVersion: kamaji.clastix.io/v1alpha1
kind: DataStore
metadata: {name: ds, namespace: t}
spec: {driver: etcd, endpoints: ["a:2379"]}`, `cluster-scoped`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Apply(context.Background(), "rejects", []*unstructured.Unstructured{obj(t, tc.doc)})
			if res[0].Err == nil || !strings.Contains(res[0].String(), tc.want) {
				t.Fatalf("got %q, want a rejection containing %q", res[0], tc.want)
			}
			if !strings.Contains(res[0].String(), res[0].Kind+" ") {
				t.Errorf("the report must name the kind: %q", res[0])
			}
		})
	}
}

func TestUnvalidatedKindsAreSkippedNotPassed(t *testing.T) {
	res := env.Apply(context.Background(), "skips", []*unstructured.Unstructured{obj(t, `
apiVersion: cozystack.io/v1alpha1
kind: WorkloadMonitor
metadata: {name: w}
spec: {replicas: 3}`)})
	if res[0].Err != nil || !strings.Contains(res[0].Skipped, "Cozystack publishes no") {
		t.Fatalf("got %q, want skipped with the reason", res[0])
	}
	if got := Summary(res); !strings.Contains(got, "0 accepted, 0 rejected, 1 skipped") {
		t.Errorf("summary %q", got)
	}
}

// Objects written the way Kamaji's users write them must pass our minimal Kamaji CRDs: the fields
// we do not type are preserved, not refused.
func TestKamajiObjectsAccepted(t *testing.T) {
	tcp := obj(t, `
apiVersion: kamaji.clastix.io/v1alpha1
kind: TenantControlPlane
metadata: {name: tenant-a}
spec:
  dataStore: tenant-a
  dataStoreSchema: tenant_a
  controlPlane:
    deployment: {replicas: 2}
    service: {serviceType: ClusterIP}
  kubernetes:
    version: v1.33.0
    kubelet: {cgroupfs: systemd}
  networkProfile: {port: 6443}
  addons: {coreDNS: {}}`)
	res := env.Apply(context.Background(), "kamaji", []*unstructured.Unstructured{tcp})
	if res[0].Err != nil {
		t.Fatal(res[0])
	}
}
