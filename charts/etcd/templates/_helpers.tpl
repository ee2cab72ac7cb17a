{{- /* The EtcdCluster's name; every object the chart renders is named after it. */ -}}
{{- define "etcd.cluster" -}}
{{- get .Values "clusterName" | default .Release.Name -}}
{{- end -}}

{{- define "etcd.labels" -}}
app.kubernetes.io/name: etcd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: {{ include "etcd.cluster" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- /* Selects the cluster's member Pods: the operator's own selector (see operator/internal/resources). */ -}}
{{- define "etcd.memberSelector" -}}
app.kubernetes.io/name: etcd
etcd-operator.cozystack.io/cluster: {{ include "etcd.cluster" . }}
{{- end -}}

{{- /* spec.topologySpreadConstraints: the platform's spread policy, then topologySpreadConstraints for
the topology keys the platform's leave to the app. Cozystack passes its policy to every app as
_cluster.scheduling.globalAppTopologySpreadConstraints, a YAML document with a topologySpreadConstraints
list, and its apps give each such constraint a labelSelector of their own Pods: here, where one has
none, this cluster's members (etcd.memberSelector). A key in both is the platform's (two constraints on
one key and whenUnsatisfiable would be refused). */ -}}
{{- define "etcd.topologySpreadConstraints" -}}
{{- $raw := dig "scheduling" "globalAppTopologySpreadConstraints" "" (.Values._cluster | default dict) }}
{{- $out := list }}
{{- $keys := list }}
{{- if $raw }}
{{- $doc := ternary $raw (dict) (kindIs "map" $raw) }}
{{- if kindIs "string" $raw }}{{ $doc = fromYaml $raw }}{{ end }}
{{- $global := get $doc "topologySpreadConstraints" }}
{{- if or (hasKey $doc "Error") (not (kindIs "slice" $global)) }}
{{- fail (printf "_cluster.scheduling.globalAppTopologySpreadConstraints must be a YAML document with a topologySpreadConstraints list, as Cozystack's platform writes it; got %q" (toString $raw)) }}
{{- end }}
{{- $members := include "etcd.memberSelector" . | fromYaml }}
{{- range $global }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $members) }}
{{- end }}
{{- $out = append $out $c }}
{{- $keys = append $keys $c.topologyKey }}
{{- end }}
{{- end }}
{{- range .Values.topologySpreadConstraints }}
{{- if not (has .topologyKey $keys) }}
{{- $out = append $out . }}
{{- end }}
{{- end }}
{{- with $out }}{{ toYaml . }}{{ end }}
{{- end -}}

{{- /* Certificate, Secret and Issuer names of the chart's PKI; stable, because Kamaji and network
policies refer to them. They are the names Cozystack's own etcd app gives its PKI (for the cluster
etcd: CAs etcd-ca and etcd-peer-ca, Issuers etcd-issuer and etcd-peer-issuer), so upgrading a tenant
from that app keeps every CA: a renamed issuer would re-issue the CA certificates. */ -}}
{{- define "etcd.selfSignedIssuer" -}}{{ include "etcd.cluster" . }}-selfsigning-issuer{{- end -}}
{{- define "etcd.caCertificate" -}}{{ include "etcd.cluster" . }}-ca{{- end -}}
{{- define "etcd.peerCACertificate" -}}{{ include "etcd.cluster" . }}-peer-ca{{- end -}}
{{- define "etcd.caSecret" -}}{{ include "etcd.cluster" . }}-ca-tls{{- end -}}
{{- define "etcd.peerCASecret" -}}{{ include "etcd.cluster" . }}-peer-ca-tls{{- end -}}
{{- define "etcd.caIssuer" -}}{{ include "etcd.cluster" . }}-issuer{{- end -}}
{{- define "etcd.peerCAIssuer" -}}
{{- if .Values.tls.pki.separatePeerCA }}{{ include "etcd.cluster" . }}-peer-issuer{{ else }}{{ include "etcd.caIssuer" . }}{{ end -}}
{{- end -}}
{{- /* The subject of every certificate of the chart's PKI (as Cozystack's app writes it). */ -}}
{{- define "etcd.subject" -}}
organizations:
  - {{ .Release.Namespace }}
organizationalUnits:
  - {{ .Release.Name }}
{{- end -}}

{{- /* The cluster DNS domain of the certificates' fully qualified names: clusterDomain, else the
platform's (Cozystack passes it to every package as _cluster.cluster-domain), else cluster.local. */ -}}
{{- define "etcd.clusterDomain" -}}
{{- .Values.clusterDomain | default (index (.Values._cluster | default dict) "cluster-domain") | default "cluster.local" -}}
{{- end -}}

{{- /* Values only the Cozystack package has: Cozystack's etcd app names the volume `size` and
`storageClass` and its resources a flat {cpu, memory}; the package keeps those names (it has no
storage.size or storage.storageClassName), so existing apps' values render the same cluster. The
chart itself has storage.*. */ -}}
{{- define "etcd.storageSize" -}}
{{- if hasKey .Values "size" }}{{ .Values.size }}{{ else }}{{ .Values.storage.size }}{{ end -}}
{{- end -}}
{{- define "etcd.storageClassName" -}}
{{- if hasKey .Values "storageClass" }}{{ .Values.storageClass }}{{ else }}{{ .Values.storage.storageClassName }}{{ end -}}
{{- end -}}

{{- /* spec.resources: resources as core/v1 ResourceRequirements, or Cozystack's flat {cpu, memory},
read as Cozystack reads it: each is the limit; the memory request equals it and the cpu request is
the limit divided by the platform's CPU allocation ratio (_cluster.cpu-allocation-ratio, 10 unless
set), so an app upgraded from Cozystack's keeps its members' resources. */ -}}
{{- define "etcd.resources" -}}
{{- $r := .Values.resources | default dict }}
{{- if or (hasKey $r "cpu") (hasKey $r "memory") }}
{{- if or (hasKey $r "requests") (hasKey $r "limits") }}
{{- fail "resources: either requests/limits (core/v1 ResourceRequirements) or a flat cpu/memory (each the limit), not both" }}
{{- end }}
{{- $cluster := .Values._cluster | default dict }}
{{- $ratios := dict "cpu" (index $cluster "cpu-allocation-ratio" | default 10) "memory" (index $cluster "memory-allocation-ratio" | default 1) }}
{{- $out := dict "limits" dict "requests" dict }}
{{- range $name := list "cpu" "memory" }}
{{- with get $r $name }}
{{- $_ := set $out.limits $name (toString .) }}
{{- $request := divf (include "etcd.quantityValue" .) (get $ratios $name | float64) }}
{{- $_ := set $out.requests $name (ternary (toString $request) ($request | int64 | toString) (eq $name "cpu")) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- else if $r }}
{{- toYaml $r }}
{{- end }}
{{- end -}}

{{- /* The number a Kubernetes quantity stands for (4Gi: 4294967296, 500m: 0.5), as a float. */ -}}
{{- define "etcd.quantityValue" -}}
{{- $q := toString . }}
{{- $num := regexFind `^[0-9]+(\.[0-9]+)?` $q }}
{{- $suffix := trimPrefix $num $q }}
{{- $units := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- if or (not $num) (not (hasKey $units $suffix)) }}
{{- fail (printf "%q is not a quantity this chart can read (a number with an optional suffix m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei)" $q) }}
{{- end }}
{{- mulf ($num | float64) (get $units $suffix) }}
{{- end -}}

{{- /* options.quotaBackendBytes in bytes: an integer as it is, or a share of the volume ("95%"), as
Cozystack's app sets it, so etcd raises its NOSPACE alarm before the volume fills up. */ -}}
{{- define "etcd.quotaBackendBytes" -}}
{{- $q := .Values.options.quotaBackendBytes }}
{{- if and (kindIs "string" $q) (hasSuffix "%" $q) }}
{{- $share := divf (trimSuffix "%" $q | float64) 100 }}
{{- printf "%.0f" (mulf (include "etcd.quantityValue" (include "etcd.storageSize" .) | float64) $share) }}
{{- else }}
{{- int64 $q }}
{{- end }}
{{- end -}}
{{- define "etcd.serverSecret" -}}{{ include "etcd.cluster" . }}-server-tls{{- end -}}
{{- define "etcd.peerSecret" -}}{{ include "etcd.cluster" . }}-peer-tls{{- end -}}
{{- define "etcd.clientSecret" -}}{{ include "etcd.cluster" . }}-client-tls{{- end -}}
{{- /* The S3 credentials Secret the chart renders from backup.s3.credentials.accessKeyId/secretAccessKey. */ -}}
{{- define "etcd.backupSecret" -}}{{ include "etcd.cluster" . }}-backup-s3{{- end -}}

{{- /* pki mode with leaf certificates the chart renders itself. */ -}}
{{- define "etcd.chartLeaves" -}}
{{- if and (eq .Values.tls.mode "pki") (eq .Values.tls.pki.leafCertificates "chart") }}true{{ end -}}
{{- end -}}

{{- /* The client certificate (CN root) is needed by the operator (chart leaves with mTLS) or by Kamaji. */ -}}
{{- define "etcd.clientCert" -}}
{{- if eq .Values.tls.mode "pki" }}
{{- if or .Values.dataStore.enabled (and (include "etcd.chartLeaves" .) .Values.tls.clientAuth) }}true{{ end }}
{{- end -}}
{{- end -}}

{{- /* Fails early, with the value to change, where the API or a dependent object would fail later. */ -}}
{{- /* The Services of the cluster: the operator's names, or an adopted cluster's (spec.layout). */ -}}
{{- define "etcd.headlessService" -}}
{{- .Values.layout.headlessServiceName | default (include "etcd.cluster" .) -}}
{{- end -}}
{{- define "etcd.clientService" -}}
{{- .Values.layout.clientServiceName | default (printf "%s-client" (include "etcd.cluster" .)) -}}
{{- end -}}

{{- define "etcd.validate" -}}
{{- $v := .Values }}
{{- if and $v.tls.peerAutoTLS $v.tls.peer (ne $v.tls.mode "none") }}
{{- fail "tls.peerAutoTLS excludes tls.peer: the peer plane runs either etcd's auto-TLS or certificates" }}
{{- end }}
{{- if ne (not $v.layout.headlessServiceName) (not $v.layout.clientServiceName) }}
{{- fail "layout.headlessServiceName and layout.clientServiceName are set together (copy spec.layout of the adopted EtcdCluster)" }}
{{- end }}
{{- if gt (len (include "etcd.cluster" .)) 40 }}
{{- fail (printf "the cluster name %q is longer than 40 characters; set clusterName" (include "etcd.cluster" .)) }}
{{- end }}
{{- if and $v.dataStore.enabled (ne $v.tls.mode "pki") }}
{{- fail "dataStore.enabled needs tls.mode=pki: a Kamaji DataStore for etcd needs the CA's private key, which only the chart's own PKI has" }}
{{- end }}
{{- if and $v.auth.enabled (eq $v.tls.mode "none") }}
{{- fail "auth.enabled needs TLS on the client plane (tls.mode other than none): credentials must not cross a plaintext connection" }}
{{- end }}
{{- if and $v.auth.enabled (not $v.auth.rootCredentialsSecretName) (not $v.auth.passwordlessRoot) }}
{{- fail "auth.enabled needs auth.rootCredentialsSecretName (a basic-auth Secret with username root) or auth.passwordlessRoot" }}
{{- end }}
{{- if and $v.auth.rootCredentialsSecretName $v.auth.passwordlessRoot }}
{{- fail "auth.rootCredentialsSecretName and auth.passwordlessRoot are mutually exclusive: a passwordless root has no password" }}
{{- end }}
{{- if and (eq $v.tls.mode "issuers") (not $v.tls.issuers.server.name) }}
{{- fail "tls.mode=issuers needs tls.issuers.server.name" }}
{{- end }}
{{- if eq $v.tls.mode "issuers" }}
{{- range $role := list "server" "operatorClient" "peer" }}
{{- $ref := get $v.tls.issuers $role }}
{{- /* The API's CEL rule on issuerRef, caught here with the value's name. */}}
{{- if and (has ($ref.group | default "cert-manager.io") (list "cert-manager.io")) (not (has $ref.kind (list "Issuer" "ClusterIssuer"))) }}
{{- fail (printf "tls.issuers.%s.kind %q: cert-manager.io issuers are Issuer or ClusterIssuer; set tls.issuers.%s.group to name an external issuer of another kind" $role $ref.kind $role) }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $v.tls.mode "secrets" }}
{{- if not $v.tls.secrets.server }}{{ fail "tls.mode=secrets needs tls.secrets.server" }}{{ end }}
{{- if and $v.tls.clientAuth (not $v.tls.secrets.operatorClient) }}{{ fail "tls.mode=secrets with tls.clientAuth needs tls.secrets.operatorClient" }}{{ end }}
{{- if and $v.tls.peer (not $v.tls.secrets.peer) }}{{ fail "tls.mode=secrets with tls.peer needs tls.secrets.peer" }}{{ end }}
{{- end }}
{{- $r := $v.bootstrap.restore }}
{{- if and (eq $r.source "s3") (not (and $r.s3.endpoint $r.s3.bucket $r.s3.key $r.s3.credentialsSecretName)) }}
{{- fail "bootstrap.restore.source=s3 needs bootstrap.restore.s3.endpoint, bucket, key and credentialsSecretName" }}
{{- end }}
{{- if and (eq $r.source "pvc") (not (and $r.pvc.claimName $r.pvc.subPath)) }}
{{- fail "bootstrap.restore.source=pvc needs bootstrap.restore.pvc.claimName and subPath" }}
{{- end }}
{{- if and (eq $r.source "snapshot") (not $r.snapshotName) }}
{{- fail "bootstrap.restore.source=snapshot needs bootstrap.restore.snapshotName (an EtcdSnapshot of this namespace)" }}
{{- end }}
{{- if and $r.encryptionSecretName (not (has $r.source (list "s3" "pvc"))) }}
{{- fail (printf "bootstrap.restore.encryptionSecretName is for s3 and pvc sources, not source=%s (an EtcdSnapshot records how its artifact was stored)" $r.source) }}
{{- end }}
{{- if and (ne $r.source "none") (eq $v.storage.medium "Memory") }}
{{- fail (printf "bootstrap.restore.source=%s is refused with storage.medium=Memory (a tmpfs seed would restore the snapshot again on every restart): set storage.medium to \"\" or bootstrap.restore.source to none" $r.source) }}
{{- end }}
{{- if $v.backup.enabled }}{{ include "etcd.validateBackup" . }}{{ end }}
{{- end -}}

{{- /* backup.enabled: a complete destination, and S3 credentials from exactly one place. The
inline keys may be absent from the values (the Cozystack package leaves them out), hence get. */ -}}
{{- define "etcd.validateBackup" -}}
{{- $b := .Values.backup }}
{{- if eq $b.destination "pvc" }}
{{- if not $b.pvc.claimName }}{{ fail "backup.destination=pvc needs backup.pvc.claimName" }}{{ end }}
{{- else }}
{{- if not (and $b.s3.endpoint $b.s3.bucket) }}{{ fail "backup.destination=s3 needs backup.s3.endpoint and backup.s3.bucket" }}{{ end }}
{{- $c := $b.s3.credentials }}
{{- $keys := compact (list (get $c "accessKeyId") (get $c "secretAccessKey")) }}
{{- if and $c.secretName $keys }}
{{- fail "backup.s3.credentials: set either secretName (an existing Secret) or accessKeyId and secretAccessKey (the chart renders the Secret), not both" }}
{{- else if and (not $c.secretName) (not (hasKey $c "accessKeyId")) }}
{{- fail (printf "backup.destination=s3 needs backup.s3.credentials.secretName: a Secret in namespace %s with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" .Release.Namespace) }}
{{- else if and (not $c.secretName) (lt (len $keys) 2) }}
{{- fail "backup.destination=s3 needs backup.s3.credentials.secretName (a Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or both backup.s3.credentials.accessKeyId and secretAccessKey for the chart to render one" }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "etcd.privateKey" -}}
algorithm: {{ .Values.tls.pki.privateKey.algorithm }}
{{- if ne .Values.tls.pki.privateKey.algorithm "Ed25519" }}
size: {{ .Values.tls.pki.privateKey.size }}
{{- end }}
{{- end -}}

{{- /* The Cozystack package's transitional headless Service <cluster>-headless (value
legacyHeadlessService, which only the package has): members adopted from the legacy etcd.aenix.io
operator keep their DNS names under it, so the server and peer certificates cover it too. */ -}}
{{- define "etcd.legacyHeadlessService" -}}
{{- if get .Values "legacyHeadlessService" }}{{ include "etcd.cluster" . }}-headless{{ end -}}
{{- end -}}
