package charts_test

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

const (
	etcdChart     = "etcd"
	etcdRelease   = "etcd"
	etcdNamespace = "tenant-a"
)

var etcdCases = []renderCase{
	{name: "defaults", values: `{}`},
	{name: "tls-none", values: `tls: {mode: none}`},
	{name: "tls-pki-separate-peer-ca", values: `tls: {pki: {separatePeerCA: true, privateKey: {algorithm: RSA, size: 4096}, extraDNSNames: [etcd.example.com]}}`},
	{name: "tls-pki-operator-leaves", values: `tls: {pki: {leafCertificates: operator, separatePeerCA: true}}`},
	{name: "tls-pki-server-only", values: `tls: {clientAuth: false, peer: false}`},
	{name: "tls-issuers", values: `
tls:
  mode: issuers
  issuers:
    server: {name: platform-ca, kind: ClusterIssuer}
    peer: {name: peer-ca}
`},
	{name: "tls-issuers-external", values: `
tls:
  mode: issuers
  issuers:
    server: {name: aws-pca, kind: AWSPCAClusterIssuer, group: awspca.cert-manager.io}
    operatorClient: {name: platform-ca, kind: ClusterIssuer, group: cert-manager.io}
    peer: {name: peer-ca, group: cert-manager.io}
    certificateTemplate: {duration: 2160h, renewBefore: 360h, privateKey: {algorithm: RSA, size: 3072}}
`},
	{name: "tls-secrets", values: `tls: {mode: secrets, secrets: {server: s, operatorClient: c, peer: p}}`},
	{name: "memory-medium", values: `storage: {medium: Memory, size: 512Mi, storageClassName: fast}`},
	// What Cozystack merges in (_cluster), with resources in its flat form and the quota as a share.
	{name: "cozystack-platform-values", values: `
_cluster: {cluster-domain: cozy.local, cpu-allocation-ratio: "4"}
storage: {size: 2Gi}
options: {quotaBackendBytes: 50%}
resources: {cpu: "2", memory: 1Gi}
`},
	{name: "quota-in-bytes", values: `options: {quotaBackendBytes: 8589934592, autoCompactionMode: "", autoCompactionRetention: ""}`},
	{name: "storage-class-empty", values: `storage: {storageClassName: "-", size: 10Gi}`},
	{name: "vpa-initial", values: `vpa: {enabled: true}`},
	{name: "vpa-off", values: `vpa: {enabled: true, updateMode: "Off", containerPolicies: []}`},
	{name: "vpa-auto", values: `
vpa:
  enabled: true
  updateMode: Auto
  minReplicas: 2
  containerPolicies:
    - {containerName: "*", controlledResources: [memory], controlledValues: RequestsOnly}
`},
	{name: "datastore", values: `dataStore: {enabled: true}`},
	{name: "adopted-auto-tls-peers", values: `
tls: {mode: none, peerAutoTLS: true}
layout: {headlessServiceName: etcd-headless, clientServiceName: etcd, dataDirSubPath: default.etcd}
`},
	{name: "adopted-pki-datastore", values: `
dataStore: {enabled: true}
tls: {peer: false, peerAutoTLS: true}
layout: {headlessServiceName: etcd-headless, clientServiceName: etcd, dataDirSubPath: default.etcd}
`},
	{name: "datastore-leaves-by-operator", values: `{dataStore: {enabled: true, name: tenant-a-etcd, endpoints: ["etcd.example.com:2379"]}, tls: {pki: {leafCertificates: operator}}}`},
	{name: "monitoring", values: `
metrics:
  serviceMonitor: {enabled: true, scrapeTimeout: 10s, labels: {release: prometheus}}
  vmServiceScrape: {enabled: true, interval: 15s}
`},
	{name: "full-spec", values: `
clusterName: tenant-etcd
version: 3.5.35
replicas: 5
progressDeadlineSeconds: 1200
imageRepository: registry.local/etcd
imagePullSecrets: [{name: regcred}]
resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}
priorityClassName: system-cluster-critical
nodeSelector: {node-role: etcd}
tolerations: [{key: dedicated, operator: Equal, value: etcd, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Exists}]}]}}}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
additionalMetadata: {labels: {cozystack.io/service: etcd}, annotations: {team: platform}}
clusterDomain: k8s.example
storage: {size: 8Gi, storageClassName: replicated}
options: {quotaBackendBytes: 8589934592, autoCompactionMode: periodic, autoCompactionRetention: 5m, snapshotCount: 10000}
auth: {enabled: true, rootCredentialsSecretName: etcd-root}
bootstrap:
  restore:
    source: s3
    s3: {endpoint: "https://s3.example", bucket: backups, key: etcd/snap.db, credentialsSecretName: s3-creds, region: eu-1, forcePathStyle: true}
`},
	{name: "adopted-auth-tls-secrets", values: `
tls: {mode: secrets, clientAuth: true, peer: false, peerAutoTLS: true, secrets: {server: etcd-server, operatorClient: etcd-client}}
auth: {enabled: true, passwordlessRoot: true}
layout: {headlessServiceName: etcd-headless, clientServiceName: etcd, dataDirSubPath: default.etcd}
`},
	{name: "pdb-by-chart", values: `podDisruptionBudget: {mode: chart, minAvailable: 2}`},
	{name: "restore-pvc", values: `bootstrap: {restore: {source: pvc, pvc: {claimName: backups, subPath: snap.db}}}`},
	{name: "restore-pvc-encrypted", values: `bootstrap: {restore: {source: pvc, pvc: {claimName: backups, subPath: snap.db.zst.age}, encryptionSecretName: etcd-backup-keys}}`},
	{name: "restore-snapshot", values: `bootstrap: {restore: {source: snapshot, snapshotName: etcd-29412345}}`},
	{name: "defrag-default", values: `defrag: {enabled: true}`},
	{name: "defrag-quota", values: `
defrag:
  enabled: true
  schedule: "30 2 * * *"
  timeZone: Europe/Berlin
  suspend: true
  memberTimeoutSeconds: 900
  rule: {freeSpaceAbove: 1Gi, quotaUsageAbove: "75%", minReclaim: 64Mi}
  successfulRunsHistoryLimit: 5
  failedRunsHistoryLimit: 2
`},
	{name: "defrag-all", values: `defrag: {enabled: true, rule: {all: true}}`},
	{name: "backup-s3-secret", values: `
backup:
  enabled: true
  schedule: "*/30 * * * *"
  timeZone: Europe/Berlin
  suspend: true
  concurrencyPolicy: Replace
  startingDeadlineSeconds: 600
  retention: {keepLast: 48, maxAge: 168h, keepFailed: 0}
  deletionPolicy: Retain
  s3:
    endpoint: https://s3.example
    bucket: backups
    prefix: tenants/a/etcd
    region: eu-1
    forcePathStyle: true
    credentials: {secretName: s3-creds}
quorumLoss: RestoreLatestSnapshot
`},
	{name: "backup-s3-inline-keys", values: `
backup:
  enabled: true
  s3:
    endpoint: http://minio.storage.svc:9000
    bucket: etcd
    credentials: {accessKeyId: AKIAEXAMPLE, secretAccessKey: wJalrXUtnFEMI-example}
quorumLoss: RebuildFromSurvivor
`},
	{name: "backup-pvc", values: `backup: {enabled: true, destination: pvc, pvc: {claimName: etcd-backups, subPath: daily}}`},
	{name: "backup-encrypted", values: `backup: {enabled: true, destination: pvc, pvc: {claimName: etcd-backups}, encryptionSecretName: etcd-backup-keys, compression: Zstd}`},
}

var etcdRejects = []rejectCase{
	{name: "negative replicas", values: `replicas: -1`, wantErr: []string{"/replicas", "minimum"}},
	{name: "replicas as text", values: `replicas: three`, wantErr: []string{"/replicas", "want integer"}},
	{name: "unknown key", values: `replica: 3`, wantErr: []string{"additional properties 'replica' not allowed"}},
	{name: "unknown nested key", values: `tls: {mtls: true}`, wantErr: []string{"/tls", "additional properties 'mtls' not allowed"}},
	{name: "version with v", values: `version: v3.6.16`, wantErr: []string{"/version", "does not match pattern"}},
	{name: "storage medium", values: `storage: {medium: Disk}`, wantErr: []string{"/storage/medium", "Memory"}},
	{name: "storage size", values: `storage: {size: lots}`, wantErr: []string{"/storage/size"}},
	{name: "quota share", values: `options: {quotaBackendBytes: 150%}`, wantErr: []string{"/options/quotaBackendBytes", "does not match pattern"}},
	{name: "flat and nested resources", values: `resources: {cpu: "1", limits: {cpu: "1"}}`, wantErr: []string{"either requests/limits", "not both"}},
	{name: "unreadable quantity for a share", values: `storage: {size: "1e3"}`, wantErr: []string{"is not a quantity this chart can read"}},
	{name: "tls mode", values: `tls: {mode: strict}`, wantErr: []string{"/tls/mode", "pki"}},
	{name: "vpa mode", values: `vpa: {updateMode: Sometimes}`, wantErr: []string{"/vpa/updateMode", "InPlaceOrRecreate"}},
	{name: "long cluster name", values: `clusterName: a-very-long-cluster-name-that-breaks-dns-labels`, wantErr: []string{"/clusterName", "maxLength"}},
	{name: "peer auto-TLS beside peer TLS", values: `tls: {peerAutoTLS: true}`, wantErr: []string{"tls.peerAutoTLS excludes tls.peer"}},
	{name: "layout half set", values: `layout: {headlessServiceName: etcd-headless}`, wantErr: []string{"layout.headlessServiceName and layout.clientServiceName are set together"}},
	{name: "datastore without pki", values: `{dataStore: {enabled: true}, tls: {mode: issuers, issuers: {server: {name: x}}}}`, wantErr: []string{"dataStore.enabled needs tls.mode=pki"}},
	{name: "auth without secret", values: `auth: {enabled: true}`, wantErr: []string{"auth.rootCredentialsSecretName"}},
	{name: "auth with secret and passwordless root", values: `auth: {enabled: true, rootCredentialsSecretName: r, passwordlessRoot: true}`,
		wantErr: []string{"mutually exclusive"}},
	{name: "auth over plaintext", values: `{auth: {enabled: true, rootCredentialsSecretName: r}, tls: {mode: none}}`, wantErr: []string{"auth.enabled needs TLS"}},
	{name: "issuers without server", values: `tls: {mode: issuers}`, wantErr: []string{"tls.issuers.server.name"}},
	{name: "external issuer kind without group", values: `tls: {mode: issuers, issuers: {server: {name: x}, peer: {name: p, kind: AWSPCAClusterIssuer}}}`, wantErr: []string{"tls.issuers.peer.kind", "set tls.issuers.peer.group"}},
	{name: "issuer group not a DNS name", values: `tls: {issuers: {server: {group: Not_A_Group}}}`, wantErr: []string{"/tls/issuers/server/group", "does not match pattern"}},
	{name: "issuer kind not a kind", values: `tls: {issuers: {operatorClient: {kind: "Cluster Issuer"}}}`, wantErr: []string{"/tls/issuers/operatorClient/kind", "does not match pattern"}},
	{name: "certificate duration in days", values: `tls: {issuers: {certificateTemplate: {duration: 90d}}}`, wantErr: []string{"/tls/issuers/certificateTemplate/duration", "does not match pattern"}},
	{name: "secrets without peer", values: `tls: {mode: secrets, secrets: {server: s, operatorClient: c}}`, wantErr: []string{"tls.secrets.peer"}},
	{name: "s3 restore without key", values: `bootstrap: {restore: {source: s3, s3: {endpoint: e, bucket: b, credentialsSecretName: c}}}`, wantErr: []string{"bootstrap.restore.s3"}},
	{name: "restore source", values: `bootstrap: {restore: {source: etcdsnapshot}}`, wantErr: []string{"/bootstrap/restore/source", "snapshot"}},
	{name: "snapshot restore without name", values: `bootstrap: {restore: {source: snapshot}}`, wantErr: []string{"bootstrap.restore.source=snapshot needs bootstrap.restore.snapshotName"}},
	{name: "snapshot name not a name", values: `bootstrap: {restore: {source: snapshot, snapshotName: Snap_1}}`, wantErr: []string{"/bootstrap/restore/snapshotName", "does not match pattern"}},
	{name: "restore on tmpfs", values: `{storage: {medium: Memory}, bootstrap: {restore: {source: snapshot, snapshotName: s}}}`, wantErr: []string{"bootstrap.restore.source=snapshot is refused with storage.medium=Memory", "set storage.medium"}},
	{name: "quorum loss policy", values: `quorumLoss: Rebuild`, wantErr: []string{"/quorumLoss", "RebuildFromSurvivor"}},
	{name: "backup concurrency policy", values: `backup: {concurrencyPolicy: Allow}`, wantErr: []string{"/backup/concurrencyPolicy", "Forbid"}},
	{name: "backup destination", values: `backup: {destination: gcs}`, wantErr: []string{"/backup/destination", "pvc"}},
	{name: "backup deletion policy", values: `backup: {deletionPolicy: delete}`, wantErr: []string{"/backup/deletionPolicy", "Retain"}},
	{name: "backup keeps none", values: `backup: {retention: {keepLast: 0}}`, wantErr: []string{"/backup/retention/keepLast", "minimum"}},
	{name: "backup max age in days", values: `backup: {retention: {maxAge: 7d}}`, wantErr: []string{"/backup/retention/maxAge", "does not match pattern"}},
	{name: "backup time zone", values: `backup: {timeZone: "Europe Berlin"}`, wantErr: []string{"/backup/timeZone", "does not match pattern"}},
	{name: "backup to s3 without bucket", values: `backup: {enabled: true, s3: {endpoint: e, credentials: {secretName: c}}}`, wantErr: []string{"backup.destination=s3 needs backup.s3.endpoint and backup.s3.bucket"}},
	{name: "backup to s3 without credentials", values: `backup: {enabled: true, s3: {endpoint: e, bucket: b}}`, wantErr: []string{"backup.s3.credentials.secretName", "accessKeyId and secretAccessKey"}},
	{name: "backup to s3 with half the keys", values: `backup: {enabled: true, s3: {endpoint: e, bucket: b, credentials: {accessKeyId: a}}}`, wantErr: []string{"both backup.s3.credentials.accessKeyId and secretAccessKey"}},
	{name: "backup to s3 with a Secret and keys", values: `backup: {enabled: true, s3: {endpoint: e, bucket: b, credentials: {secretName: c, accessKeyId: a, secretAccessKey: k}}}`, wantErr: []string{"either secretName", "not both"}},
	{name: "restore key for a snapshot source", values: `bootstrap: {restore: {source: snapshot, snapshotName: s, encryptionSecretName: k}}`, wantErr: []string{"bootstrap.restore.encryptionSecretName is for s3 and pvc sources, not source=snapshot"}},
	{name: "backup compression", values: `backup: {compression: zstd}`, wantErr: []string{"/backup/compression", "Zstd"}},
	{name: "backup to pvc without claim", values: `backup: {enabled: true, destination: pvc}`, wantErr: []string{"backup.destination=pvc needs backup.pvc.claimName"}},
	{name: "both rule kinds", values: `alerts: {prometheusRule: {enabled: true}, vmRule: {enabled: true}}`, wantErr: []string{"enable one"}},
}

func TestEtcdChartRenders(t *testing.T) {
	for _, tc := range etcdCases {
		t.Run(tc.name, func(t *testing.T) {
			ms := render(t, etcdChart, etcdRelease, etcdNamespace, tc.values)
			checkGolden(t, etcdChart, tc.name, ms)
			checkEtcdCluster(t, ms)
			checkTLSReferences(t, ms)
			checkOnePDB(t, ms)
			checkVPATarget(t, ms)
			checkDataStore(t, ms)
			checkMetricsService(t, ms)
			checkBackupSchedule(t, ms)
		})
	}
}

func TestEtcdChartRejectsBadValues(t *testing.T) {
	for _, tc := range etcdRejects {
		t.Run(tc.name, func(t *testing.T) { checkRejected(t, etcdChart, tc) })
	}
}

// checkEtcdCluster decodes the EtcdCluster into the API type, refusing unknown fields: a value
// rendered under a misspelt key would be silently pruned by the apiserver.
func checkEtcdCluster(t *testing.T, ms []chartrender.Manifest) *v1alpha2.EtcdCluster {
	t.Helper()
	u := one(t, ms, "EtcdCluster")
	if u.GetAPIVersion() != v1alpha2.GroupVersion.String() {
		t.Errorf("EtcdCluster apiVersion %s, want %s", u.GetAPIVersion(), v1alpha2.GroupVersion)
	}
	c := &v1alpha2.EtcdCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, c, true); err != nil {
		t.Fatalf("EtcdCluster does not decode into v1alpha2.EtcdCluster: %v", err)
	}
	return c
}

// secretNames maps the Secret each rendered Certificate writes to the Certificate.
func secretNames(t *testing.T, ms []chartrender.Manifest) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, c := range objects(ms, "Certificate") {
		out[str(t, c, "spec", "secretName")] = c
	}
	return out
}

// checkTLSReferences: every Issuer a Certificate or the EtcdCluster names exists, and in the
// chart's own PKI every Secret the EtcdCluster names is written by a rendered Certificate.
func checkTLSReferences(t *testing.T, ms []chartrender.Manifest) {
	issuers := map[string]bool{}
	for _, i := range objects(ms, "Issuer") {
		issuers[i.GetName()] = true
	}
	for _, c := range objects(ms, "Certificate") {
		if name := str(t, c, "spec", "issuerRef", "name"); !issuers[name] {
			t.Errorf("Certificate %s is issued by %s, which the chart does not render", c.GetName(), name)
		}
	}
	c := checkEtcdCluster(t, ms)
	if len(issuers) == 0 || c.Spec.TLS == nil {
		return // no chart PKI: the user's issuers and Secrets are outside the release
	}
	secrets := secretNames(t, ms)
	var refs []string
	var issuerRefs []v1alpha2.IssuerReference
	if cl := c.Spec.TLS.Client; cl != nil {
		if cl.ServerSecretRef != nil {
			refs = append(refs, cl.ServerSecretRef.Name)
		}
		if cl.OperatorClientSecretRef != nil {
			refs = append(refs, cl.OperatorClientSecretRef.Name)
		}
		if cl.CertManager != nil {
			issuerRefs = append(issuerRefs, cl.CertManager.ServerIssuerRef)
			if cl.CertManager.OperatorClientIssuerRef != nil {
				issuerRefs = append(issuerRefs, *cl.CertManager.OperatorClientIssuerRef)
			}
		}
	}
	if p := c.Spec.TLS.Peer; p != nil {
		if p.SecretRef != nil {
			refs = append(refs, p.SecretRef.Name)
		}
		if p.CertManager != nil {
			issuerRefs = append(issuerRefs, p.CertManager.IssuerRef)
		}
	}
	for _, r := range refs {
		if secrets[r] == nil {
			t.Errorf("EtcdCluster names Secret %s, which no rendered Certificate writes", r)
		}
	}
	for _, r := range issuerRefs {
		if !issuers[r.Name] || r.Kind != "Issuer" {
			t.Errorf("EtcdCluster names issuer %s/%s, which the chart does not render", r.Kind, r.Name)
		}
	}
}

// checkOnePDB: exactly one budget selects the member Pods — the operator's, unless the chart
// renders its own and switches the operator's off.
func checkOnePDB(t *testing.T, ms []chartrender.Manifest) {
	c := checkEtcdCluster(t, ms)
	operators := 0
	if c.PodDisruptionBudgetEnabled() {
		operators = 1
	}
	if n := len(objects(ms, "PodDisruptionBudget")) + operators; n != 1 {
		t.Errorf("%d PodDisruptionBudgets would select the member Pods (operator's enabled: %t); exactly one is allowed", n, operators == 1)
	}
}

func checkVPATarget(t *testing.T, ms []chartrender.Manifest) {
	for _, v := range objects(ms, "VerticalPodAutoscaler") {
		c := one(t, ms, "EtcdCluster")
		got := [3]string{str(t, v, "spec", "targetRef", "apiVersion"), str(t, v, "spec", "targetRef", "kind"), str(t, v, "spec", "targetRef", "name")}
		want := [3]string{v1alpha2.GroupVersion.String(), "EtcdCluster", c.GetName()}
		if got != want {
			t.Errorf("VPA targets %v, want %v", got, want)
		}
	}
}

// checkDataStore: Kamaji gets the CA key and a CN=root client certificate, both rendered here.
func checkDataStore(t *testing.T, ms []chartrender.Manifest) {
	stores := objects(ms, "DataStore")
	if len(stores) == 0 {
		return
	}
	ds := stores[0]
	if ds.GetNamespace() != "" {
		t.Errorf("DataStore is cluster-scoped but has namespace %q", ds.GetNamespace())
	}
	secrets := secretNames(t, ms)
	tlsCfg := []string{"spec", "tlsConfig"}
	ca := secrets[str(t, ds, append(tlsCfg, "certificateAuthority", "privateKey", "secretReference", "name")...)]
	if ca == nil || !getBool(ca, "spec", "isCA") || str(t, ca, "spec", "privateKey", "rotationPolicy") != "Never" {
		t.Errorf("DataStore CA key is not a rendered CA Certificate with rotationPolicy Never")
	}
	client := secrets[str(t, ds, append(tlsCfg, "clientCertificate", "certificate", "secretReference", "name")...)]
	if client == nil || str(t, client, "spec", "commonName") != "root" {
		t.Errorf("DataStore client certificate is not a rendered Certificate with CN root")
	}
	for _, keyPath := range []string{"certificate", "privateKey"} {
		if got := str(t, ds, append(tlsCfg, "clientCertificate", keyPath, "secretReference", "namespace")...); got != etcdNamespace {
			t.Errorf("DataStore %s Secret namespace %q, want %q", keyPath, got, etcdNamespace)
		}
	}
}

func getBool(u *unstructured.Unstructured, path ...string) bool {
	b, _, _ := unstructured.NestedBool(u.Object, path...)
	return b
}

// checkMetricsService: the chart's metrics Service selects exactly the operator's member Pods.
func checkMetricsService(t *testing.T, ms []chartrender.Manifest) {
	for _, s := range objects(ms, "Service") {
		got, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector")
		c := one(t, ms, "EtcdCluster").GetName()
		want := map[string]string{v1alpha2.LabelAppName: v1alpha2.AppName, v1alpha2.LabelCluster: c}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Service %s selects %v, want the member selector %v", s.GetName(), got, want)
		}
		ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
		if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(v1alpha2.MetricsPort) {
			t.Errorf("Service %s ports %v, want the metrics port %d", s.GetName(), ports, v1alpha2.MetricsPort)
		}
	}
	scrapes := slices.Concat(objects(ms, "ServiceMonitor"), objects(ms, "VMServiceScrape"))
	if len(scrapes) > 0 && len(objects(ms, "Service")) != 1 {
		t.Errorf("scrape objects without the metrics Service")
	}
}

// checkBackupSchedule: the schedule decodes into the API type (unknown fields refused) and backs up
// the chart's own cluster; a Secret is rendered only as the schedule's S3 credentials, with both
// keys and kept on uninstall, so none is rendered when the schedule reads a Secret of the user's.
func checkBackupSchedule(t *testing.T, ms []chartrender.Manifest) {
	t.Helper()
	secrets := objects(ms, "Secret")
	schedules := objects(ms, "EtcdBackupSchedule")
	if len(schedules) == 0 {
		if len(secrets) > 0 {
			t.Errorf("%d Secrets rendered without a backup schedule", len(secrets))
		}
		return
	}
	bs := &v1alpha2.EtcdBackupSchedule{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(one(t, ms, "EtcdBackupSchedule").Object, bs, true); err != nil {
		t.Fatalf("EtcdBackupSchedule does not decode into v1alpha2.EtcdBackupSchedule: %v", err)
	}
	if c := one(t, ms, "EtcdCluster"); bs.Spec.ClusterRef.Name != c.GetName() || bs.Namespace != c.GetNamespace() {
		t.Errorf("EtcdBackupSchedule %s/%s backs up %s, want the EtcdCluster %s/%s", bs.Namespace, bs.Name, bs.Spec.ClusterRef.Name, c.GetNamespace(), c.GetName())
	}
	var creds string
	if s3 := bs.Spec.SnapshotTemplate.Destination.S3; s3 != nil {
		creds = s3.CredentialsSecretRef.Name
	}
	for _, u := range secrets {
		sec := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, sec, true); err != nil {
			t.Fatal(err)
		}
		if sec.Name != creds {
			t.Errorf("Secret %s is rendered, but the backup schedule reads %q", sec.Name, creds)
		}
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			if len(sec.Data[k]) == 0 {
				t.Errorf("Secret %s has no %s", sec.Name, k)
			}
		}
		if sec.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("Secret %s is deleted on uninstall, but the snapshots that outlive the release read it", sec.Name)
		}
	}
}
