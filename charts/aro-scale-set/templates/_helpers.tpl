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
values (scaleset, auth, runner, secretResolution, resource). What maps cleanly onto this chart's values
is translated in place, once per render, before any template reads them (every template goes through
the scale set's name or the controller lookup, which call this first); what upstream renders broken or
this chart cannot say the same way is refused, naming the key. docs/migrating.md lists the mapping.
*/}}
{{- define "aro-scale-set.translateExperimentalShape" -}}
{{- $v := .Values }}
{{- $experimental := false }}
{{- range $key := list "scaleset" "auth" "runner" "secretResolution" "resource" }}
{{- if hasKey $v $key }}{{ $experimental = true }}{{ end }}
{{- end }}
{{- if and $experimental (not (hasKey $v "__aroTranslatedExperimental")) }}
{{- $_ := set $v "__aroTranslatedExperimental" true }}
{{- $ss := $v.scaleset | default dict }}
{{- with $ss.name }}{{ $_ := set $v "runnerScaleSetName" . }}{{ end }}
{{- with $ss.runnerGroup }}{{ $_ := set $v "runnerGroup" . }}{{ end }}
{{- with $ss.labels }}{{ $_ := set $v "scaleSetLabels" . }}{{ end }}
{{- if hasKey $ss "minRunners" }}{{ $_ := set $v "minRunners" $ss.minRunners }}{{ end }}
{{- if hasKey $ss "maxRunners" }}{{ $_ := set $v "maxRunners" $ss.maxRunners }}{{ end }}
{{- $auth := $v.auth | default dict }}
{{- with $auth.url }}{{ $_ := set $v "githubConfigUrl" . }}{{ end }}
{{- $app := $auth.app | default dict }}
{{- $hasApp := or $app.clientId $app.installationId $app.privateKey }}
{{- if and $auth.secretName (or $auth.githubToken $hasApp) }}
{{- fail "auth.secretName: give either an existing Secret's name or auth.githubToken / auth.app, not both (upstream's experimental chart would ignore the inline credentials)" }}
{{- end }}
{{- if $auth.secretName }}
{{- $_ := set $v "githubConfigSecret" $auth.secretName }}
{{- else if $auth.githubToken }}
{{- $_ := set $v "githubConfigSecret" (dict "github_token" $auth.githubToken) }}
{{- else if $hasApp }}
{{- $_ := set $v "githubConfigSecret" (dict "github_app_id" (toString ($app.clientId | default "")) "github_app_installation_id" (toString ($app.installationId | default "")) "github_app_private_key" ($app.privateKey | default "")) }}
{{- end }}
{{- $sr := $v.secretResolution | default dict }}
{{- $srType := $sr.type | default "kubernetes" }}
{{- if eq $srType "azureKeyVault" }}
{{- fail "secretResolution.type: azureKeyVault: upstream's experimental chart renders vaultConfig.type azureKeyVault, which upstream's controller refuses (it knows azure_key_vault only); set keyVault.type: azure_key_vault and keyVault.azureKeyVault (url, tenantId, clientId, certificatePath) instead (docs/secrets.md)" }}
{{- else if ne $srType "kubernetes" }}
{{- fail (printf "secretResolution.type: %s is not a secret resolution upstream or ARO knows (kubernetes, or keyVault.type: azure_key_vault)" $srType) }}
{{- end }}
{{- $runner := $v.runner | default dict }}
{{- $mode := $runner.mode | default "" }}
{{- if has $mode (list "dind" "kubernetes" "kubernetes-novolume") }}
{{- $cm := dict "type" $mode }}
{{- $km := $runner.kubernetesMode | default dict }}
{{- with $km.workVolumeClaim }}{{ $_ := set $cm "kubernetesModeWorkVolumeClaim" . }}{{ end }}
{{- $_ := set $v "containerMode" $cm }}
{{- else if ne $mode "" }}
{{- fail (printf "runner.mode: %s is not a mode upstream's experimental chart renders (\"\", dind, kubernetes)" $mode) }}
{{- end }}
{{- $untranslated := list }}
{{- include "aro-scale-set.translateExperimentalRunnerPod" . }}
{{- $km := $runner.kubernetesMode | default dict }}
{{- if $km.serviceAccountName }}{{ $untranslated = append $untranslated "runner.kubernetesMode.serviceAccountName" }}{{ end }}
{{- /* The dind and kubernetes modes render upstream's classic templates, whose settings are upstream's
  experimental defaults below: a default is accepted (users copy upstream's values.yaml whole), any
  other value is refused by name rather than dropped without a word. */}}
{{- $kmDefaults := dict "hookPath" "/home/runner/k8s/index.js" "requireJobContainer" "true" }}
{{- range $k, $want := $kmDefaults }}
{{- if and (hasKey $km $k) (ne (toString (get $km $k)) $want) }}{{ $untranslated = append $untranslated (printf "runner.kubernetesMode.%s" $k) }}{{ end }}
{{- end }}
{{- $dindDefaults := dict "copyRunnerExternals" "true" "dockerGroupId" "123" "dockerSock" "unix:///var/run/docker.sock" "waitForDockerInSeconds" "120" }}
{{- range $k, $val := ($runner.dind | default dict) }}
{{- if eq $k "container" }}
{{- range $ck, $cv := ($val | default dict) }}
{{- if not (and (eq $ck "image") (eq (toString $cv) "docker:dind")) }}{{ $untranslated = append $untranslated (printf "runner.dind.container.%s" $ck) }}{{ end }}
{{- end }}
{{- else if or (not (hasKey $dindDefaults $k)) (ne (toString $val) (get $dindDefaults $k)) }}
{{- $untranslated = append $untranslated (printf "runner.dind.%s" $k) }}
{{- end }}
{{- end }}
{{- /* resource.<object>.metadata: resourceMeta.<object> (the same object names); resource.all: the
  labels and annotations of every object the chart makes (and of the runner pod, above). As upstream,
  actions.github.com/* keys are dropped from what goes on the chart's own objects and kept on the
  spec's metadata of the objects the controller makes. */}}
{{- $chartObjects := list "autoscalingRunnerSet" "managerRole" "managerRoleBinding" "noPermissionServiceAccount" "kubernetesModeRole" "kubernetesModeRoleBinding" "kubernetesModeServiceAccount" }}
{{- $specObjects := list "autoscalingListener" "listenerServiceAccount" "listenerRole" "listenerRoleBinding" "listenerConfigSecret" "ephemeralRunnerSet" "ephemeralRunner" "ephemeralRunnerConfigSecret" }}
{{- $resourceMeta := deepCopy ($v.resourceMeta | default dict) }}
{{- $unknownResource := list }}
{{- range $key, $res := ($v.resource | default dict) }}
{{- $res = $res | default dict }}
{{- if not (kindIs "map" $res) }}{{ fail (printf "resource.%s must be an object" $key) }}{{ end }}
{{- range $field, $_ := $res }}{{ if not (has $field (list "metadata" "extraRules")) }}{{ $unknownResource = append $unknownResource (printf "resource.%s.%s" $key $field) }}{{ end }}{{ end }}
{{- if $res.extraRules }}{{ $untranslated = append $untranslated (printf "resource.%s.extraRules" $key) }}{{ end }}
{{- $meta := $res.metadata | default dict }}
{{- $isSpec := has $key $specObjects }}
{{- $given := dict }}
{{- range $part := list "labels" "annotations" }}
{{- $values := dict }}
{{- range $k, $val := (get $meta $part | default dict) }}{{ if or $isSpec (not (hasPrefix "actions.github.com/" $k)) }}{{ $_ := set $values $k (toString $val) }}{{ end }}{{ end }}
{{- with $values }}{{ $_ := set $given $part . }}{{ end }}
{{- end }}
{{- if eq $key "all" }}
{{- with $given.labels }}{{ $_ := set $v "labels" (merge . ($v.labels | default dict)) }}{{ end }}
{{- with $given.annotations }}{{ $_ := set $v "annotations" (merge . ($v.annotations | default dict)) }}{{ end }}
{{- else if or $isSpec (has $key $chartObjects) }}
{{- with $given }}{{ $_ := set $resourceMeta $key (merge . (get $resourceMeta $key | default dict)) }}{{ end }}
{{- else }}
{{- $unknownResource = append $unknownResource (printf "resource.%s" $key) }}
{{- end }}
{{- end }}
{{- with $resourceMeta }}{{ $_ := set $v "resourceMeta" . }}{{ end }}
{{- with $unknownResource }}
{{- fail (printf "%s: not a value of upstream's gha-runner-scale-set-experimental chart" (join ", " .)) }}
{{- end }}
{{- with $untranslated }}
{{- fail (printf "%s: not translated from upstream's gha-runner-scale-set-experimental values; give the runner pod as template (containerMode adds dind or the hooks to it) (docs/migrating.md maps each key)" (join ", " .)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Upstream's experimental `runner.pod` and `runner.container` as the runner pod `template`, as its
autoscalingrunnserset.yaml builds `spec.template`: the container named runner from runner.container
(image and command defaulted; in dind and kubernetes mode only image and command, with runner.env as
its env, which is all upstream reads there), runner.pod.spec.containers after it, initContainers (in
dind mode between the externals copy and Docker, as upstream orders them) and volumes appended to what
the mode adds, every other runner.pod.spec field as is (serviceAccountName aside: the chart's, as
upstream), and runner.pod.metadata (actions.github.com/* keys dropped) with the chart's own labels as
the template's metadata (resource.all's labels and annotations under them, as upstream). Upstream's own type checks are kept, with its words. Called once, from
translateExperimentalShape, after the scale set's name is known.
*/}}
{{- define "aro-scale-set.translateExperimentalRunnerPod" -}}
{{- $v := .Values }}
{{- $runner := $v.runner | default dict }}
{{- $mode := $runner.mode | default "" }}
{{- $pod := $runner.pod | default dict }}
{{- if not (kindIs "map" $pod) }}{{ fail "runner.pod must be an object" }}{{ end }}
{{- $podMeta := $pod.metadata | default dict }}
{{- $podSpec := $pod.spec | default dict }}
{{- if not (kindIs "map" $podMeta) }}{{ fail "runner.pod.metadata must be an object" }}{{ end }}
{{- if not (kindIs "map" $podSpec) }}{{ fail "runner.pod.spec must be an object" }}{{ end }}
{{- $container := $runner.container | default dict }}
{{- if not (kindIs "map" $container) }}{{ fail "runner.container must be an object" }}{{ end }}
{{- $lists := dict }}
{{- range $field := list "containers" "initContainers" "volumes" }}
{{- $items := get $podSpec $field | default list }}
{{- if not (kindIs "slice" $items) }}{{ fail (printf "runner.pod.spec.%s must be a list" $field) }}{{ end }}
{{- range $items }}
{{- if not (kindIs "map" .) }}{{ fail (printf "runner.pod.spec.%s must be a list of objects" $field) }}{{ end }}
{{- if not .name }}{{ fail (printf "runner.pod.spec.%s[].name is required" $field) }}{{ end }}
{{- if and (eq $field "containers") (eq .name "runner") }}{{ fail "runner.pod.spec.containers[].name must not be 'runner' (reserved: the runner container is runner.container)" }}{{ end }}
{{- end }}
{{- $_ := set $lists $field $items }}
{{- end }}
{{- $image := $container.image | default "ghcr.io/actions/actions-runner:latest" }}
{{- $command := $container.command | default (list "/home/runner/run.sh") }}
{{- if not (kindIs "string" $image) }}{{ fail "runner.container.image must be a string" }}{{ end }}
{{- if not (kindIs "slice" $command) }}{{ fail "runner.container.command must be a list" }}{{ end }}
{{- $runnerContainer := dict "name" "runner" "image" $image "command" $command }}
{{- $modeExtras := omit $container "name" "image" "command" }}
{{- if eq $mode "" }}
{{- $runnerContainer = merge $runnerContainer (deepCopy $modeExtras) }}
{{- if $runner.env }}{{ fail "runner.env: upstream's experimental chart reads it only with runner.mode dind or kubernetes; without a mode set runner.container.env" }}{{ end }}
{{- else }}
{{- with $modeExtras }}
{{- fail (printf "runner.container.%s: upstream's experimental chart ignores it with runner.mode %s (it reads only image and command there; runner.env is the runner's env); leave it out, or give the runner pod as template with containerMode" (join ", runner.container." (keys . | sortAlpha)) $mode) }}
{{- end }}
{{- with $runner.env }}
{{- if not (kindIs "slice" .) }}{{ fail "runner.env must be a list" }}{{ end }}
{{- $_ := set $runnerContainer "env" (deepCopy .) }}
{{- end }}
{{- end }}
{{- $spec := deepCopy (omit $podSpec "containers" "initContainers" "volumes" "serviceAccountName") }}
{{- $_ := set $spec "containers" (concat (list $runnerContainer) (deepCopy $lists.containers)) }}
{{- with $lists.initContainers }}{{ $_ := set $spec "initContainers" (deepCopy .) }}{{ end }}
{{- with $lists.volumes }}{{ $_ := set $spec "volumes" (deepCopy .) }}{{ end }}
{{- $own := include "aro-scale-set.labels" . | fromYaml }}
{{- $all := dig "all" "metadata" (dict) ($v.resource | default dict) }}
{{- $labels := dict }}
{{- range $source := list ($all.labels | default dict) ($podMeta.labels | default dict) }}
{{- range $k, $val := $source }}{{ if not (hasPrefix "actions.github.com/" $k) }}{{ $_ := set $labels $k (toString $val) }}{{ end }}{{ end }}
{{- end }}
{{- $annotations := dict }}
{{- range $source := list ($all.annotations | default dict) ($podMeta.annotations | default dict) }}
{{- range $k, $val := $source }}{{ if not (hasPrefix "actions.github.com/" $k) }}{{ $_ := set $annotations $k (toString $val) }}{{ end }}{{ end }}
{{- end }}
{{- $metadata := dict "labels" (merge $own $labels) }}
{{- with $annotations }}{{ $_ := set $metadata "annotations" . }}{{ end }}
{{- $defaultRunner := dict "name" "runner" "image" "ghcr.io/actions/actions-runner:latest" "command" (list "/home/runner/run.sh") }}
{{- $runnerGiven := or (ne (toJson $runnerContainer) (toJson $defaultRunner)) $lists.containers $lists.initContainers $lists.volumes $podMeta.labels $podMeta.annotations }}
{{- range $k, $val := omit $podSpec "containers" "initContainers" "volumes" "serviceAccountName" }}{{ if $val }}{{ $runnerGiven = true }}{{ end }}{{ end }}
{{- if ne (toJson $v.template) (toJson (dict "spec" (dict "containers" (list $defaultRunner)))) }}
{{- /* This chart's own template next to the experimental shape: used as given, unless both say it. */}}
{{- if $runnerGiven }}
{{- fail "template: give the runner pod either as upstream's experimental runner.pod / runner.container or as template, not both" }}
{{- end }}
{{- else }}
{{- $_ := set $v "template" (dict "metadata" $metadata "spec" $spec) }}
{{- if eq $mode "dind" }}{{ $_ := set $v "__aroInitContainersBeforeDind" true }}{{ end }}
{{- end }}
{{- end }}

{{/* The scale set's name: runnerScaleSetName, else the release name; `_` is not valid in object names. */}}
{{- define "aro-scale-set.scaleSetName" -}}
{{- include "aro-scale-set.translateExperimentalShape" . }}
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
{{- include "aro-scale-set.translateExperimentalShape" . }}
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
