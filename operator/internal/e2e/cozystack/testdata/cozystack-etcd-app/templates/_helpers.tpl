{{- /* Only what the e2e needs of Cozystack's quantity handling: sizes in Gi, cpu in m. */ -}}
{{- define "app.sizeBytes" -}}
{{- if not (hasSuffix "Gi" .Values.size) }}{{ fail "this stand-in reads size in Gi only" }}{{ end -}}
{{- mul (trimSuffix "Gi" .Values.size | int64) 1073741824 -}}
{{- end -}}

{{- /* The names every server and peer leaf of the app carries: the short .svc forms only. */ -}}
{{- define "app.dnsNames" -}}
- etcd
- etcd.{{ .Release.Namespace }}.svc
- "*.etcd.{{ .Release.Namespace }}.svc"
- "*.etcd-headless.{{ .Release.Namespace }}.svc"
- localhost
{{- end -}}
