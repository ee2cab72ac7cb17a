{{- define "etcd-operator.name" -}}
{{- .Chart.Name -}}
{{- end -}}

{{- define "etcd-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* The operator's metrics Service: <fullname>-metrics, the fullname cut so the whole fits a Service name (63). */ -}}
{{- define "etcd-operator.metricsService" -}}
{{- printf "%s-metrics" (include "etcd-operator.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{- define "etcd-operator.labels" -}}
app.kubernetes.io/name: {{ include "etcd-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "etcd-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "etcd-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* The operator image: the manager's, and the one it runs snapshot and restore agents with (--agent-image). */ -}}
{{- define "etcd-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
