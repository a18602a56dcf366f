{{/*
Names. The base name is fixed (no chart-name games): "<release>-aro-controller", or the release name
when it already contains "aro-controller", or fullnameOverride.
*/}}
{{- define "aro-controller.baseName" -}}
aro-controller
{{- end }}

{{- define "aro-controller.name" -}}
{{- default (include "aro-controller.baseName" .) .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aro-controller.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default (include "aro-controller.baseName" .) .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "aro-controller.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "aro-controller.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aro-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aro-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels on every object: the user's `labels`, under the chart's own, which always win. */}}
{{- define "aro-controller.labels" -}}
{{- $own := include "aro-controller.ownLabels" . | fromYaml }}
{{- toYaml (merge $own (deepCopy (default (dict) .Values.labels))) }}
{{- end }}

{{- define "aro-controller.ownLabels" -}}
helm.sh/chart: {{ include "aro-controller.chart" . }}
{{ include "aro-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: aro-controller
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "aro-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "aro-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- if not .Values.serviceAccount.name }}
{{- fail "serviceAccount.name is required when serviceAccount.create is false" }}
{{- end }}
{{- if eq .Values.serviceAccount.name "default" }}
{{- fail "serviceAccount.name must not be \"default\": the controller's rights would go to every pod of the namespace" }}
{{- end }}
{{- .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "aro-controller.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Leader election is on exactly when more than one replica runs. */}}
{{- define "aro-controller.leaderElection" -}}
{{- if gt (int .Values.replicaCount) 1 }}true{{ else }}false{{ end }}
{{- end }}

{{/* metrics.controllerManagerAddr is "[host]:port"; ARO serves probes and metrics there. */}}
{{- define "aro-controller.probePort" -}}
{{- regexReplaceAll "^.*:" .Values.metrics.controllerManagerAddr "" }}
{{- end }}

{{- define "aro-controller.probeBindAddress" -}}
{{- $host := regexReplaceAll ":[0-9]+$" .Values.metrics.controllerManagerAddr "" | trimPrefix "[" | trimSuffix "]" }}
{{- default "0.0.0.0" $host }}
{{- end }}

{{/* The names of the RBAC objects. */}}
{{- define "aro-controller.managerRoleName" -}}
{{- include "aro-controller.fullname" . }}-manager
{{- end }}
{{- define "aro-controller.listenerRoleName" -}}
{{- include "aro-controller.fullname" . }}-listener
{{- end }}
{{- define "aro-controller.leaderElectionRoleName" -}}
{{- include "aro-controller.fullname" . }}-leader-election
{{- end }}
{{- define "aro-controller.watchRoleName" -}}
{{- include "aro-controller.fullname" . }}-watch
{{- end }}

{{/* The four kinds of actions.github.com/v1alpha1. */}}
{{- define "aro-controller.crdResources" -}}
- autoscalingrunnersets
- ephemeralrunnersets
- ephemeralrunners
- autoscalinglisteners
{{- end }}

{{/*
RBAC rules, each set derived from what the controllers do (docs/helm.md, "Permissions"). Shared by the
ClusterRole and the single-namespace Roles so the two modes cannot drift apart.
*/}}

{{/* Owning the ARO kinds: create and delete them, patch finalizers and status, and watch them. */}}
{{- define "aro-controller.rules.ownKinds" -}}
- apiGroups: [actions.github.com]
  resources:
  {{- range .kinds }}
  - {{ . }}
  {{- end }}
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [actions.github.com]
  resources:
  {{- range .kinds }}
  - {{ . }}/status
  {{- end }}
  verbs: [get, patch, update]
- apiGroups: [actions.github.com]
  resources:
  {{- range .kinds }}
  - {{ . }}/finalizers
  {{- end }}
  verbs: [update]
{{- end }}

{{/*
What the informers watch. Writes to pods, secrets, service accounts and roles are granted per namespace:
by the scale-set chart's manager Role in a runner namespace, by the listener Role here.
*/}}
{{- define "aro-controller.rules.watchDependents" -}}
- apiGroups: [""]
  resources: [pods, serviceaccounts]
  verbs: [list, watch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [list, watch]
{{- end }}

{{/*
Lifting the cleanup-protection finalizer of an aro-scale-set release's manager Role and RoleBinding once
its set is gone. Those two grant the controller its rights in the set's namespace, so after `helm
uninstall` deleted them the last of them can only be released through a right granted here. Patching a
Role's finalizers needs no escalate: the apiserver lets a change of only finalizers through.
*/}}
{{- define "aro-controller.rules.releaseProtection" -}}
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, patch]
{{- end }}

{{/* Kubernetes Events on the runners (core v1, what `kubectl describe` shows). */}}
{{- define "aro-controller.rules.events" -}}
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end }}
