{{- /* The EtcdCluster's name; every object the chart renders is named after it. */ -}}
{{- define "etcd.cluster" -}}
{{- .Values.clusterName | default .Release.Name -}}
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

{{- /* Secret and Issuer names of the chart's PKI; stable, because Kamaji and network policies refer to them. */ -}}
{{- define "etcd.caSecret" -}}{{ include "etcd.cluster" . }}-ca-tls{{- end -}}
{{- define "etcd.peerCASecret" -}}{{ include "etcd.cluster" . }}-peer-ca-tls{{- end -}}
{{- define "etcd.caIssuer" -}}{{ include "etcd.cluster" . }}-ca{{- end -}}
{{- define "etcd.peerCAIssuer" -}}
{{- if .Values.tls.pki.separatePeerCA }}{{ include "etcd.cluster" . }}-peer-ca{{ else }}{{ include "etcd.caIssuer" . }}{{ end -}}
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
