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
The baton container. In native mode it is an init container with
restartPolicy: Always; the rest is the same in both modes.
*/}}
{{- define "baton.sidecar" -}}
- name: baton
  image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if eq .Values.sidecarMode "native" }}
  restartPolicy: Always
  {{- end }}
  args:
  - --lease-name={{ include "baton.leaseName" . }}
  - --lease-duration={{ .Values.leaseDuration }}
  - --renew-deadline={{ .Values.renewDeadline }}
  - --retry-period={{ .Values.retryPeriod }}
  - --release-on-shutdown={{ .Values.releaseOnShutdown }}
  - --shutdown-grace={{ .Values.shutdownGrace }}
  # The application's API on loopback; probes and metrics on the Pod IP.
  - --http-addr=127.0.0.1:{{ .Values.httpPort }}
  - --grpc-addr=127.0.0.1:{{ .Values.grpcPort }}
  - --metrics-addr=0.0.0.0:{{ .Values.metrics.port }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
  env:
  - name: POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  - name: POD_NAMESPACE
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  ports:
  - name: metrics
    containerPort: {{ .Values.metrics.port }}
  {{- if eq .Values.sidecarMode "native" }}
  # The application starts once baton answers.
  startupProbe:
    httpGet: {path: /healthz, port: metrics}
    periodSeconds: 1
    failureThreshold: 30
  {{- end }}
  # Fails only when the election loop is stuck, not when the API server is
  # unreachable.
  livenessProbe:
    httpGet: {path: /healthz, port: metrics}
    periodSeconds: 10
    timeoutSeconds: 2
    failureThreshold: 3
  {{- if .Values.leaderReadiness.enabled }}
  # Leader-only readiness: see leaderReadiness in values.yaml for the rollout caveat.
  readinessProbe:
    httpGet: {path: /readyz/leader, port: metrics}
    periodSeconds: 1
    failureThreshold: 1
  {{- end }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
{{- end -}}
