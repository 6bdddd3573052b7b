{{/*
baton-lib: named templates another chart includes to add baton to a
workload it renders. Every template takes one argument,

  (dict "root" $ "baton" .Values.baton)

where .Values.baton holds the settings below (any left out take the
defaults in "baton-lib.defaults"). Names: "name" (default
"<release>-baton") names the ServiceAccount, Role and RoleBinding, so two
releases share a namespace; "leaseName" defaults to "name".

  baton-lib.rbac               the ServiceAccount, Role and RoleBinding (as
                               serviceAccount.create and rbac.create say;
                               the Role has get on Pods where
                               baton-lib.nativeSidecarShutdown says so);
                               with leaderLabel.key also the Role and
                               RoleBinding "<name>-leader-label" on Pods
                               (rbac.create) and the admission policy that
                               narrows them (leaderLabel.admissionPolicy.create)
  baton-lib.container          the sidecar, a list item for initContainers
                               (sidecarMode native, Kubernetes >= 1.29) or
                               containers (classic)
  baton-lib.serviceAccountName the Pod's serviceAccountName
  baton-lib.leaseName          the Lease
  baton-lib.checkKubeVersion   fails the render for a native sidecar on a
                               cluster older than 1.29
  baton-lib.nativeSidecarShutdown
                               "true" when the sidecar runs with
                               --native-sidecar (sidecarMode native and
                               nativeSidecarShutdown), else empty
*/}}

{{- define "baton-lib.defaults" -}}
name: ""
leaseName: ""
leaseDuration: 15s
renewDeadline: 10s
retryPeriod: 2s
releaseOnShutdown: true
# Empty: not passed, so baton's defaults apply (--shutdown-grace:
# renewDeadline + 1s; --max-unnamed-valid-for: 500ms).
shutdownGrace: ""
maxUnnamedValidFor: ""
sseHeartbeat: 15s
events: true
logFormat: logfmt
logLevel: info
leaderLabel:
  key: ""
  admissionPolicy:
    create: true
image:
  repository: ghcr.io/baton-sidecar/baton
  tag: ""
  pullPolicy: IfNotPresent
sidecarMode: native
# With sidecarMode native: --native-sidecar, and get on Pods in the Role (on
# SIGTERM baton reads its Pod and releases at once if the application's
# containers have exited). Ignored in classic mode.
nativeSidecarShutdown: true
rbac:
  create: true
serviceAccount:
  create: true
  name: ""
  annotations: {}
httpPort: 4040
grpcPort: 4041
metrics:
  port: 9090
leaderReadiness:
  enabled: false
resources:
  requests:
    cpu: 10m
    memory: 24Mi
  limits:
    memory: 64Mi
containerSecurityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
extraArgs: []
labels: {}
{{- end -}}

{{/* The settings: .baton over the defaults, as YAML. */}}
{{- define "baton-lib.settings" -}}
{{- $defaults := include "baton-lib.defaults" . | fromYaml -}}
{{- toYaml (mergeOverwrite $defaults (deepCopy (default (dict) .baton))) -}}
{{- end -}}

{{- define "baton-lib.name" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- default (printf "%s-baton" .root.Release.Name) $s.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "baton-lib.leaseName" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- default (include "baton-lib.name" .) $s.leaseName -}}
{{- end -}}

{{- define "baton-lib.serviceAccountName" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- if $s.serviceAccount.create -}}
{{- default (include "baton-lib.name" .) $s.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" $s.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the sidecar passes --native-sidecar and its Role grants get on
Pods: a native sidecar (the kubelet stops it after the application's
containers) with nativeSidecarShutdown on. Empty otherwise: a classic
sidecar stops together with the application, which may still be running.
*/}}
{{- define "baton-lib.nativeSidecarShutdown" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- if and (eq $s.sidecarMode "native") $s.nativeSidecarShutdown -}}
true
{{- end -}}
{{- end -}}

{{- define "baton-lib.checkKubeVersion" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- $kube := .root.Capabilities.KubeVersion.Version -}}
{{- if and (eq $s.sidecarMode "native") (not (semverCompare ">=1.29.0-0" $kube)) -}}
{{- fail (printf "sidecarMode=native needs Kubernetes >= 1.29 (this cluster: %s); use sidecarMode=classic" $kube) -}}
{{- end -}}
{{- end -}}

{{/*
The baton container. In native mode it is an init container with
restartPolicy: Always; the rest is the same in both modes.
*/}}
{{- define "baton-lib.container" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
- name: baton
  image: "{{ $s.image.repository }}:{{ $s.image.tag | default .root.Chart.AppVersion }}"
  imagePullPolicy: {{ $s.image.pullPolicy }}
  {{- if eq $s.sidecarMode "native" }}
  restartPolicy: Always
  {{- end }}
  args:
  - --lease-name={{ include "baton-lib.leaseName" . }}
  - --lease-duration={{ $s.leaseDuration }}
  - --renew-deadline={{ $s.renewDeadline }}
  - --retry-period={{ $s.retryPeriod }}
  - --release-on-shutdown={{ $s.releaseOnShutdown }}
  {{- with $s.shutdownGrace }}
  - --shutdown-grace={{ . }}
  {{- end }}
  {{- with $s.maxUnnamedValidFor }}
  - --max-unnamed-valid-for={{ . }}
  {{- end }}
  - --sse-heartbeat={{ $s.sseHeartbeat }}
  - --events={{ $s.events }}
  - --log-format={{ $s.logFormat }}
  - --log-level={{ $s.logLevel }}
  {{- with $s.leaderLabel.key }}
  - --leader-label={{ . }}
  {{- end }}
  {{- if include "baton-lib.nativeSidecarShutdown" . }}
  # Stopped after the application: on SIGTERM, read this Pod and release at
  # once if its application containers have exited (get on Pods, in the Role).
  - --native-sidecar
  {{- end }}
  # The application's API on loopback; probes and metrics on the Pod IP.
  - --http-addr=127.0.0.1:{{ $s.httpPort }}
  - --grpc-addr=127.0.0.1:{{ $s.grpcPort }}
  - --metrics-addr=0.0.0.0:{{ $s.metrics.port }}
  {{- range $s.extraArgs }}
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
    containerPort: {{ $s.metrics.port }}
  {{- if eq $s.sidecarMode "native" }}
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
  {{- if $s.leaderReadiness.enabled }}
  # Leader-only readiness: a Pod is Ready only while it leads (rollouts then
  # need maxUnavailable: 100%; see docs/deploying.md).
  readinessProbe:
    httpGet: {path: /readyz/leader, port: metrics}
    periodSeconds: 1
    failureThreshold: 1
  {{- end }}
  resources:
    {{- toYaml $s.resources | nindent 4 }}
  securityContext:
    {{- toYaml $s.containerSecurityContext | nindent 4 }}
{{- end -}}

{{/* The ServiceAccount, Role and RoleBinding, each a document. */}}
{{- define "baton-lib.rbac" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- $name := include "baton-lib.name" . -}}
{{- if $s.serviceAccount.create }}
---
# The identity baton talks to the API server as.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "baton-lib.serviceAccountName" . }}
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- if $s.rbac.create }}
---
# What a baton sidecar needs and nothing more: one Lease, and with
# --native-sidecar a read of its own Pod. No delete, no list, nothing else.
# (The same Role as deploy/base/role.yaml, plus for a native sidecar the rule
# of deploy/examples/native-sidecar/pod-status-rbac.yaml.)
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
rules:
# The one Lease, by name (= --lease-name).
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [{{ include "baton-lib.leaseName" . | quote }}]
  verbs:
  # get: read the Lease when it is not held by this sidecar (before an
  # acquire, after a failed write) and before a release (release only if a
  # fresh read still names this sidecar). A leader renews from the record
  # its last write returned, without reading first.
  - get
  # update: renew, take over an expired or released Lease, release on
  # shutdown; always with the resourceVersion read (optimistic concurrency).
  - update
  # watch: followers see a release at once (sub-second handover) with one
  # long request instead of polling every retry period.
  - watch
# create: make the Lease when it does not exist. Kubernetes cannot restrict
# create by resourceNames (the new object's name is not in the URL RBAC
# authorizes), so this allows creating Leases of any name in the namespace,
# but not reading or changing them.
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
{{- if $s.events }}
# create events: Events on the Lease as leadership changes (became leader,
# stopped leading, released, new leader seen). Optional: without it baton
# logs once and records none. Only with events (--events).
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create]
{{- end }}
{{- if include "baton-lib.nativeSidecarShutdown" . }}
# get pods: on SIGTERM --native-sidecar reads this sidecar's own Pod once;
# if every container in spec.containers has terminated, it releases the
# Lease at once instead of waiting for promises no reader can act on. Pods
# are named by their ReplicaSet, so RBAC cannot name them: this allows
# reading every Pod in the namespace. Optional: without it baton waits for
# its promises as usual. Only with a native sidecar (nativeSidecarShutdown).
# The leader label's Role, where there is one, grants list and patch, not get.
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
{{- end }}
---
# Grants the Role to the sidecar's ServiceAccount, in this namespace only.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
- kind: ServiceAccount
  name: {{ include "baton-lib.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
{{- end }}
{{- if $s.leaderLabel.key }}
{{- if $s.rbac.create }}
---
# What --leader-label adds, apart from the Role above so that it exists only
# with the label on. Pods are named by their ReplicaSet, so RBAC cannot name
# them: this allows listing every Pod in the namespace and patching any of
# them; the admission policy below narrows the patches down. (The same Role
# as deploy/components/leader-label/role.yaml.)
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}-leader-label
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs:
  # list: on becoming leader, find the Pods still labelled {{ $s.leaderLabel.key }}=true
  # whose baton.dev/leader-of annotation names this Lease (a previous leader
  # killed before it removed its label).
  - list
  # patch: set the label and annotation on this sidecar's own Pod while it
  # leads; remove them from it when it stops and from a previous leader's.
  - patch
---
# Grants it to the sidecar's ServiceAccount, in this namespace only.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}-leader-label
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}-leader-label
subjects:
- kind: ServiceAccount
  name: {{ include "baton-lib.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
{{- end }}
{{- if $s.leaderLabel.admissionPolicy.create }}
{{- include "baton-lib.leaderLabelPolicy" . }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The ValidatingAdmissionPolicy and its Binding (cluster-scoped, Kubernetes
>= 1.30, named "<name>-leader-label.<namespace>" to be unique in the
cluster): a Pod update by the sidecar's ServiceAccount may add, change or
remove the leader label (value "true") and the annotation
baton.dev/leader-of, and nothing else: any other label or annotation, the
finalizers, the owner references or anything in the spec is refused. Other
users' updates are not affected. (The same checks as
deploy/components/leader-label/admission-policy.yaml.)
*/}}
{{- define "baton-lib.leaderLabelPolicy" -}}
{{- $s := include "baton-lib.settings" . | fromYaml -}}
{{- $policy := printf "%s-leader-label.%s" (include "baton-lib.name" .) .root.Release.Namespace }}
---
# Narrows the Pod patches the leader-label Role allows down to the label
# and its annotation, for this release's ServiceAccount only.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ $policy }}
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      resources: [pods]
      operations: [UPDATE]
  variables:
  - name: fromSidecar
    expression: >-
      request.userInfo.username == 'system:serviceaccount:{{ .root.Release.Namespace }}:{{ include "baton-lib.serviceAccountName" . }}'
  - name: label
    expression: "'{{ $s.leaderLabel.key }}'"
  - name: annotation
    expression: "'baton.dev/leader-of'"
  - name: oldLabels
    expression: "oldObject.metadata.?labels.orValue({})"
  - name: newLabels
    expression: "object.metadata.?labels.orValue({})"
  - name: oldAnnotations
    expression: "oldObject.metadata.?annotations.orValue({})"
  - name: newAnnotations
    expression: "object.metadata.?annotations.orValue({})"
  validations:
  - expression: "!variables.fromSidecar || object.spec == oldObject.spec"
    message: the baton ServiceAccount may not change a Pod's spec
  - expression: >-
      !variables.fromSidecar ||
      (variables.newLabels.all(k, k == variables.label ||
         (k in variables.oldLabels && variables.oldLabels[k] == variables.newLabels[k])) &&
       variables.oldLabels.all(k, k == variables.label || k in variables.newLabels))
    messageExpression: "'the baton ServiceAccount may change only the label ' + variables.label + ' of a Pod'"
  - expression: >-
      !variables.fromSidecar || !(variables.label in variables.newLabels) ||
      variables.newLabels[variables.label] == 'true'
    messageExpression: "'the baton ServiceAccount may set the label ' + variables.label + ' only to \"true\"'"
  - expression: >-
      !variables.fromSidecar ||
      (variables.newAnnotations.all(k, k == variables.annotation ||
         (k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.newAnnotations[k])) &&
       variables.oldAnnotations.all(k, k == variables.annotation || k in variables.newAnnotations))
    messageExpression: "'the baton ServiceAccount may change only the annotation ' + variables.annotation + ' of a Pod'"
  - expression: >-
      !variables.fromSidecar ||
      (object.metadata.?finalizers == oldObject.metadata.?finalizers &&
       object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences)
    message: the baton ServiceAccount may not change a Pod's finalizers or owner references
---
# Applies the policy to Pod updates in this release's namespace.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ $policy }}
  {{- with $s.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  policyName: {{ $policy }}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {{ .root.Release.Namespace }}
{{- end -}}
