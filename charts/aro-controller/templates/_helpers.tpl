{{/*
Names and labels are upstream's (gha-runner-scale-set-controller) for the same release, so that what a
user of upstream already has keeps matching: "<release>-gha-rs-controller" (Deployment, ServiceAccount,
Lease, RBAC), or the release name when it already contains "gha-rs-controller", or fullnameOverride;
`app.kubernetes.io/part-of: gha-rs-controller`, which both scale-set charts look their controller up
by; the selector with `app.kubernetes.io/namespace`, so that `helm upgrade` of an upstream release to
this chart keeps the Deployment (its selector is immutable). docs/helm.md, "Names".
*/}}
{{- define "aro-controller.baseName" -}}
gha-rs-controller
{{- end }}

{{- define "aro-controller.name" -}}
{{- default (include "aro-controller.baseName" .) .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aro-controller.fullname" -}}
{{- include "aro-controller.translateExperimentalShape" . }}
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
app.kubernetes.io/namespace: {{ include "aro-controller.namespace" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "aro-controller.partOf" -}}
gha-rs-controller
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
app.kubernetes.io/part-of: {{ include "aro-controller.partOf" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Never "default", created or not (as upstream): the controller's rights would go to every pod of the
namespace that runs without a service account of its own.
*/}}
{{- define "aro-controller.serviceAccountName" -}}
{{- if eq .Values.serviceAccount.name "default" }}
{{- fail "serviceAccount.name must not be \"default\": the controller's rights would go to every pod of the namespace" }}
{{- end }}
{{- if .Values.serviceAccount.create }}
{{- default (include "aro-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- if not .Values.serviceAccount.name }}
{{- fail "serviceAccount.name is required when serviceAccount.create is false" }}
{{- end }}
{{- .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The manager's image, which listener pods run too. Upstream's default `image.repository`
(ghcr.io/actions/gha-runner-scale-set-controller, what `helm show values` of upstream's chart prints and
users copy) means "this chart's controller image", so without a tag it is read as ARO's own image
(NOTES.txt says so). Upstream's image in any other form (a tag, a mirror) is a deliberate choice ARO
cannot honour: that image has no `aro-controller` or `aro-listener`, so its pods could never start.
*/}}
{{- define "aro-controller.upstreamImageRepository" -}}
ghcr.io/actions/gha-runner-scale-set-controller
{{- end }}

{{- define "aro-controller.defaultImageRepository" -}}
ghcr.io/aro-operator/aro
{{- end }}

{{- define "aro-controller.upstreamImageMapped" -}}
{{- if and (eq .Values.image.repository (include "aro-controller.upstreamImageRepository" .)) (not .Values.image.tag) }}true{{ end }}
{{- end }}

{{- define "aro-controller.image" -}}
{{- $repository := .Values.image.repository }}
{{- if include "aro-controller.upstreamImageMapped" . }}
{{- $repository = include "aro-controller.defaultImageRepository" . }}
{{- else if eq (regexReplaceAll "^.*/" $repository "") "gha-runner-scale-set-controller" }}
{{- fail (printf "image.repository %q (tag %q) is upstream's Go controller image: it has no aro-controller or aro-listener, so the controller and listener pods could not start. Remove image.repository and image.tag (ARO's image is %s), or name an ARO image" $repository (toString .Values.image.tag) (include "aro-controller.defaultImageRepository" .)) }}
{{- end }}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
LOG_LEVEL from flags.logLevel. Upstream also takes a zap level number (its --log-level parses one):
-1 is debug, 0 info, 1 warn, 2 and above error, and below -1 finer debug levels, which ARO does not
have; the app takes the names only, so a number is mapped to the nearest name (NOTES.txt says so).
*/}}
{{- define "aro-controller.logLevel" -}}
{{- $level := toString .Values.flags.logLevel }}
{{- if regexMatch "^-?[0-9]+$" $level }}
{{- $n := atoi $level }}
{{- if lt $n 0 }}debug{{ else if eq $n 0 }}info{{ else if eq $n 1 }}warn{{ else }}error{{ end }}
{{- else }}
{{- $level }}
{{- end }}
{{- end }}

{{- define "aro-controller.imagePullSecretNames" -}}
{{- $names := list }}
{{- range .Values.imagePullSecrets }}{{ $names = append $names .name }}{{ end }}
{{- join "," $names }}
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

{{/* The names of the RBAC objects, upstream's. */}}
{{- define "aro-controller.managerClusterRoleName" -}}
{{- include "aro-controller.fullname" . }}
{{- end }}
{{- define "aro-controller.managerSingleNamespaceRoleName" -}}
{{- include "aro-controller.fullname" . }}-single-namespace
{{- end }}
{{- define "aro-controller.listenerRoleName" -}}
{{- include "aro-controller.fullname" . }}-listener
{{- end }}
{{- /* listener.mode shared: the shared listener's Deployment and ServiceAccount, and the Secret of its configs. */}}
{{- define "aro-controller.sharedListenerName" -}}
{{- printf "%s-shared-listener" (include "aro-controller.fullname" . | trunc 47 | trimSuffix "-") }}
{{- end }}
{{- define "aro-controller.sharedListenerConfigSecret" -}}
{{- include "aro-controller.sharedListenerName" . }}-configs
{{- end }}
{{- define "aro-controller.leaderElectionRoleName" -}}
{{- include "aro-controller.fullname" . }}-leader-election
{{- end }}
{{- define "aro-controller.watchRoleName" -}}
{{- include "aro-controller.fullname" . }}-single-namespace-watch
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
  {{- if (.Values.fleetPage | default dict).enabled }}
  # get, list and watch for the fleet page's recent Warning Events.
  verbs: [create, patch, get, list, watch]
  {{- else }}
  verbs: [create, patch]
  {{- end }}
{{- end }}

{{/* The eviction webhook's Secret, Service and ValidatingWebhookConfiguration. */}}
{{- define "aro-controller.evictionWebhookName" -}}
{{- printf "%s-eviction-webhook" (include "aro-controller.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
"true" when the eviction webhook is rendered. Its configuration and the ClusterRole that lets the
controller set the caBundle are cluster-scoped, which a flags.watchSingleNamespace install must not
need: there `auto` (the default; also an unset key) is off, and only an explicit `true` renders them.
*/}}
{{- define "aro-controller.evictionWebhookEnabled" -}}
{{- $enabled := .Values.evictionWebhook.enabled }}
{{- if or (kindIs "invalid" $enabled) (eq (toString $enabled) "auto") }}
{{- $enabled = not .Values.flags.watchSingleNamespace }}
{{- end }}
{{- if and $enabled .Values.flags.busyRunnerEvictionProtection }}true{{- end }}
{{- end }}
