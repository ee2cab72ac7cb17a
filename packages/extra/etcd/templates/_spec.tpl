{{- /* spec.bootstrap from bootstrap.restore. */ -}}
{{- define "etcd.bootstrapSpec" -}}
{{- $r := .Values.bootstrap.restore }}
{{- if ne $r.source "none" }}
bootstrap:
  restore:
    source:
      {{- if eq $r.source "s3" }}
      s3:
        {{- include "etcd.s3Location" $r.s3 | nindent 8 }}
      {{- else if eq $r.source "pvc" }}
      pvc:
        claimName: {{ $r.pvc.claimName }}
        subPath: {{ $r.pvc.subPath | quote }}
      {{- else }}
      snapshotRef:
        name: {{ $r.snapshotName }}
      {{- end }}
      {{- with $r.encryptionSecretName }}
      encryption:
        secretRef:
          name: {{ . }}
      {{- end }}
{{- end }}
{{- end -}}

{{- /* An S3Location from {endpoint, bucket, key, credentialsSecretName, region, forcePathStyle}. */ -}}
{{- define "etcd.s3Location" -}}
endpoint: {{ .endpoint | quote }}
bucket: {{ .bucket | quote }}
key: {{ .key | quote }}
credentialsSecretRef:
  name: {{ .credentialsSecretName }}
{{- with .region }}
region: {{ . | quote }}
{{- end }}
{{- if .forcePathStyle }}
forcePathStyle: true
{{- end }}
{{- end -}}

{{- /* An IssuerReference from {name, kind, group}; group only when set (empty is cert-manager.io). */ -}}
{{- define "etcd.issuerRef" -}}
name: {{ .name }}
kind: {{ .kind | default "Issuer" }}
{{- with get . "group" }}
group: {{ . }}
{{- end }}
{{- end -}}

{{- /* spec.tls for tls.mode: Secrets the chart's Certificates fill, the chart's or the user's issuers
for the operator's cert-manager mode, or the user's Secrets. */ -}}
{{- define "etcd.tlsSpec" -}}
{{- $t := .Values.tls }}
{{- if and (eq $t.mode "none") $t.peerAutoTLS }}
tls:
  peer:
    autoTLS: true
{{- end }}
{{- if ne $t.mode "none" }}
{{- $server := dict }}{{- $client := dict }}{{- $peer := dict }}
{{- if include "etcd.chartLeaves" . }}
{{- $server = dict "secret" (include "etcd.serverSecret" .) }}
{{- $client = dict "secret" (include "etcd.clientSecret" .) }}
{{- $peer = dict "secret" (include "etcd.peerSecret" .) }}
{{- else if eq $t.mode "pki" }}
{{- $server = dict "issuer" (dict "name" (include "etcd.caIssuer" .) "kind" "Issuer") }}
{{- $client = $server }}
{{- $peer = dict "issuer" (dict "name" (include "etcd.peerCAIssuer" .) "kind" "Issuer") }}
{{- else if eq $t.mode "issuers" }}
{{- $server = dict "issuer" $t.issuers.server }}
{{- $client = dict "issuer" (ternary $t.issuers.operatorClient $t.issuers.server (ne $t.issuers.operatorClient.name "")) }}
{{- $peer = dict "issuer" (ternary $t.issuers.peer $t.issuers.server (ne $t.issuers.peer.name "")) }}
{{- else }}
{{- $server = dict "secret" $t.secrets.server }}
{{- $client = dict "secret" $t.secrets.operatorClient }}
{{- $peer = dict "secret" $t.secrets.peer }}
{{- end }}
tls:
  client:
    {{- if get $server "secret" }}
    serverSecretRef:
      name: {{ $server.secret }}
    {{- if $t.clientAuth }}
    operatorClientSecretRef:
      name: {{ $client.secret }}
    {{- end }}
    {{- else }}
    certManager:
      serverIssuerRef:
        {{- include "etcd.issuerRef" $server.issuer | nindent 8 }}
      {{- if $t.clientAuth }}
      operatorClientIssuerRef:
        {{- include "etcd.issuerRef" $client.issuer | nindent 8 }}
      {{- end }}
    {{- end }}
  {{- if $t.peerAutoTLS }}
  peer:
    autoTLS: true
  {{- else if $t.peer }}
  peer:
    {{- if get $peer "secret" }}
    secretRef:
      name: {{ $peer.secret }}
    {{- else }}
    certManager:
      issuerRef:
        {{- include "etcd.issuerRef" $peer.issuer | nindent 8 }}
    {{- end }}
  {{- end }}
  {{- /* pki mode with operator leaves: the operator emits them, so the lifetime and key settings
  travel as its certificate template (editable later; members are not restarted for it). */}}
  {{- if and (eq $t.mode "pki") (not (include "etcd.chartLeaves" .)) }}
  certificateTemplate:
    duration: {{ $t.pki.duration }}
    renewBefore: {{ $t.pki.renewBefore }}
    privateKey:
      algorithm: {{ $t.pki.privateKey.algorithm }}
      {{- if and $t.pki.privateKey.size (ne $t.pki.privateKey.algorithm "Ed25519") }}
      size: {{ $t.pki.privateKey.size }}
      {{- end }}
  {{- end }}
  {{- with and (eq $t.mode "issuers") (include "etcd.issuersCertificateTemplate" . | trim) }}
  certificateTemplate:
    {{- . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{- /* issuers mode: spec.tls.certificateTemplate from the fields that are set; nothing when none is. */ -}}
{{- define "etcd.issuersCertificateTemplate" -}}
{{- $ct := .Values.tls.issuers.certificateTemplate }}
{{- with $ct.duration }}
duration: {{ . }}
{{- end }}
{{- with $ct.renewBefore }}
renewBefore: {{ . }}
{{- end }}
{{- if or $ct.privateKey.algorithm $ct.privateKey.size }}
privateKey:
  {{- with $ct.privateKey.algorithm }}
  algorithm: {{ . }}
  {{- end }}
  {{- with $ct.privateKey.size }}
  size: {{ . }}
  {{- end }}
{{- end }}
{{- end -}}
