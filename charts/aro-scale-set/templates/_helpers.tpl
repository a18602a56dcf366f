{{/*
Names and labels are upstream's (gha-runner-scale-set) for the same release: "<scale set>-gha-rs-..."
objects, so that policies, monitors and `kubectl` habits written for upstream keep matching.
*/}}
{{- define "aro-scale-set.baseName" -}}
gha-rs
{{- end }}

{{/*
The `app.kubernetes.io/version` of the chart's objects: the upstream release whose API and values ARO
implements, not ARO's own version. Upstream's controller deletes an AutoscalingRunnerSet whose label
differs in major.minor from its own build (v1alpha1.IsVersionAllowed), so a scale set installed by this
chart survives a rollback to upstream 0.14.x. ARO's version is in `helm.sh/chart`. docs/helm.md, "Rollback".
*/}}
{{- define "aro-scale-set.upstreamVersion" -}}
0.14.2
{{- end }}

{{/*
Upstream's *experimental* scale-set chart (gha-runner-scale-set-experimental) takes another shape of
values (scaleset, auth, runner, secretResolution, resource). The schema lets those keys through so that
this refusal, which says what they are, is the message a user sees, rather than "additional properties
not allowed". Called from the helpers every template goes through (the scale set's name and the
controller lookup), so it is the first failure whatever template Helm renders first.
*/}}
{{- define "aro-scale-set.refuseExperimentalShape" -}}
{{- $keys := list }}
{{- range $key := list "scaleset" "auth" "runner" "secretResolution" "resource" }}
{{- if hasKey $.Values $key }}{{ $keys = append $keys $key }}{{ end }}
{{- end }}
{{- with $keys }}
{{- fail (printf "%s: values of upstream's gha-runner-scale-set-experimental chart; aro-scale-set takes gha-runner-scale-set's values (scaleset.name -> runnerScaleSetName, auth.url -> githubConfigUrl, auth.githubToken/app/secretName -> githubConfigSecret, runner.mode -> containerMode.type, runner.pod -> template; docs/helm.md maps each key)" (join ", " .)) }}
{{- end }}
{{- end }}

{{/* The scale set's name: runnerScaleSetName, else the release name; `_` is not valid in object names. */}}
{{- define "aro-scale-set.scaleSetName" -}}
{{- include "aro-scale-set.refuseExperimentalShape" . }}
{{- default .Release.Name .Values.runnerScaleSetName | replace "_" "-" }}
{{- end }}

{{- define "aro-scale-set.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "aro-scale-set.fullname" -}}
{{- printf "%s-%s" (include "aro-scale-set.scaleSetName" .) (include "aro-scale-set.baseName" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aro-scale-set.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aro-scale-set.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aro-scale-set.scaleSetName" . }}
app.kubernetes.io/instance: {{ include "aro-scale-set.scaleSetName" . }}
{{- end }}

{{/* The chart's own labels; they win over user labels. */}}
{{- define "aro-scale-set.labels" -}}
helm.sh/chart: {{ include "aro-scale-set.chart" . }}
{{ include "aro-scale-set.selectorLabels" . }}
app.kubernetes.io/version: {{ include "aro-scale-set.upstreamVersion" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gha-rs
actions.github.com/scale-set-name: {{ include "aro-scale-set.scaleSetName" . }}
actions.github.com/scale-set-namespace: {{ include "aro-scale-set.namespace" . }}
{{- end }}

{{/*
metadata.labels and metadata.annotations of one object: the global `labels`/`annotations`, then
resourceMeta.<key>, then the chart's own. Keys the chart reserves (its labels, actions.github.com/*
labels, actions.github.com/cleanup-* and values-hash annotations) cannot be set by a user.
Call with (dict "root" $ "key" "<resourceMeta key>" "labels" <extra labels dict> "annotations" <extra dict>).
*/}}
{{- define "aro-scale-set.metadata" -}}
{{- $root := .root }}
{{- $own := include "aro-scale-set.labels" $root | fromYaml }}
{{- $own = merge (default (dict) .labels) $own }}
{{- $meta := dig .key (dict) (default (dict) $root.Values.resourceMeta) }}
{{- $labels := dict }}
{{- range $source := list (default (dict) $root.Values.labels) (default (dict) $meta.labels) }}
{{- range $k, $v := $source }}
{{- if not (or (hasKey $own $k) (hasPrefix "actions.github.com/" $k)) }}
{{- $_ := set $labels $k (toString $v) }}
{{- end }}
{{- end }}
{{- end }}
{{- $annotations := dict }}
{{- range $source := list (default (dict) $root.Values.annotations) (default (dict) $meta.annotations) }}
{{- range $k, $v := $source }}
{{- if not (or (hasPrefix "actions.github.com/cleanup-" $k) (eq $k "actions.github.com/values-hash")) }}
{{- $_ := set $annotations $k (toString $v) }}
{{- end }}
{{- end }}
{{- end }}
{{- $annotations = merge (default (dict) .annotations) $annotations }}
labels:
  {{- merge $own $labels | toYaml | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* A resourceMeta entry as an AutoscalingRunnerSet spec field (labels/annotations only). */}}
{{- define "aro-scale-set.resourceMetaSpec" -}}
{{- with .labels }}
labels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "aro-scale-set.githubSecretName" -}}
{{- if kindIs "string" .Values.githubConfigSecret }}
{{- required "githubConfigSecret is required: a map of credentials, or the name of an existing secret" (.Values.githubConfigSecret | default nil) }}
{{- else }}
{{- include "aro-scale-set.fullname" . }}-github-secret
{{- end }}
{{- end }}

{{/*
A runner count as decimal text, or "" when unset. Helm types a number from a values file as float64 and
one from `--set` as int64; both are the same count (the schema has already refused fractions).
*/}}
{{- define "aro-scale-set.count" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) }}{{ int64 . }}{{ end }}
{{- end }}

{{/* The container mode; "none" (which upstream's chart renders as no mode) is "". */}}
{{- define "aro-scale-set.containerModeType" -}}
{{- $type := dig "type" "" (default (dict) .Values.containerMode) }}
{{- if ne $type "none" }}{{ $type }}{{ end }}
{{- end }}

{{- define "aro-scale-set.isKubernetesMode" -}}
{{- $t := include "aro-scale-set.containerModeType" . }}
{{- if or (eq $t "kubernetes") (eq $t "kubernetes-novolume") }}true{{ end }}
{{- end }}

{{- define "aro-scale-set.managerRoleName" -}}
{{- include "aro-scale-set.fullname" . }}-manager
{{- end }}
{{- define "aro-scale-set.noPermissionServiceAccountName" -}}
{{- include "aro-scale-set.fullname" . }}-no-permission
{{- end }}
{{- define "aro-scale-set.kubeModeName" -}}
{{- include "aro-scale-set.fullname" . }}-kube-mode
{{- end }}

{{/* Whether the chart makes the runners' service account, and which one runners get. */}}
{{- define "aro-scale-set.runnerServiceAccountName" -}}
{{- $spec := default (dict) .Values.template.spec }}
{{- if $spec.serviceAccountName }}
{{- $spec.serviceAccountName }}
{{- else if include "aro-scale-set.isKubernetesMode" . }}
{{- include "aro-scale-set.kubeModeName" . }}
{{- else }}
{{- include "aro-scale-set.noPermissionServiceAccountName" . }}
{{- end }}
{{- end }}

{{/*
The controller's service account (which the manager Role is bound to): controllerServiceAccount, or
found in the cluster through the labels the controller chart puts on its Deployment: ARO's and
upstream's both label it `app.kubernetes.io/part-of: gha-rs-controller`, so either controller is found. A controller
watching this namespace only is preferred; two candidates are refused rather than guessed between.
*/}}
{{- define "aro-scale-set.controllerServiceAccount" -}}
{{- include "aro-scale-set.refuseExperimentalShape" . }}
{{- $given := default (dict) .Values.controllerServiceAccount }}
{{- if and $given.name $given.namespace }}
{{- toJson (dict "name" $given.name "namespace" $given.namespace) }}
{{- else }}
{{- $namespace := include "aro-scale-set.namespace" . }}
{{- $all := list }}
{{- $single := list }}
{{- range (lookup "apps/v1" "Deployment" "" "").items }}
{{- $labels := default (dict) .metadata.labels }}
{{- if and (eq (get $labels "app.kubernetes.io/part-of") "gha-rs-controller") (hasKey $labels "actions.github.com/controller-service-account-name") }}
{{- $found := dict "name" (get $labels "actions.github.com/controller-service-account-name") "namespace" (get $labels "actions.github.com/controller-service-account-namespace") }}
{{- if hasKey $labels "actions.github.com/controller-watch-single-namespace" }}
{{- if eq (get $labels "actions.github.com/controller-watch-single-namespace") $namespace }}
{{- $single = append $single $found }}
{{- end }}
{{- else }}
{{- $all = append $all $found }}
{{- end }}
{{- end }}
{{- end }}
{{- $candidates := default $all $single }}
{{- if eq (len $candidates) 0 }}
{{- fail "controllerServiceAccount: no controller Deployment found (label app.kubernetes.io/part-of=gha-rs-controller); set controllerServiceAccount.namespace and controllerServiceAccount.name" }}
{{- end }}
{{- if gt (len $candidates) 1 }}
{{- fail "controllerServiceAccount: more than one controller Deployment (app.kubernetes.io/part-of=gha-rs-controller) manages this namespace; set controllerServiceAccount.namespace and controllerServiceAccount.name" }}
{{- end }}
{{- toJson (first $candidates) }}
{{- end }}
{{- end }}
