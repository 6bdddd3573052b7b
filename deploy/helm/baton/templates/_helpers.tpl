{{/* Names and labels shared by the chart's templates. */}}

{{- define "baton.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The Lease name: values.leaseName, else the full name. */}}
{{- define "baton.leaseName" -}}
{{- default (include "baton.fullname" .) .Values.leaseName -}}
{{- end -}}

{{- define "baton.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "baton.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "baton.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "baton.labels" -}}
{{ include "baton.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The settings this chart passes to the deploy/helm/baton-lib templates, as
YAML: its values (the keys the library reads) with the names it gives.
Use as (dict "root" . "baton" (include "baton.libSettings" . | fromYaml)).
*/}}
{{- define "baton.libSettings" -}}
{{- $settings := deepCopy .Values -}}
{{- $_ := set $settings "name" (include "baton.fullname" .) -}}
{{- $_ = set $settings "leaseName" (include "baton.leaseName" .) -}}
{{- $_ = set $settings.serviceAccount "name" (include "baton.serviceAccountName" .) -}}
{{- $_ = set $settings "labels" (include "baton.labels" . | fromYaml) -}}
{{- toYaml $settings -}}
{{- end -}}
