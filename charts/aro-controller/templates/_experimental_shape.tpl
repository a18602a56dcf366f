{{/*
Upstream's *experimental* controller chart (gha-runner-scale-set-controller-experimental) nests its
values under `controller`. What maps onto this chart's values is translated in place, once per render,
as `helm install` of the same keys in gha-runner-scale-set-controller's shape would set them (a map
given merges over this chart's default, a list replaces it); what ARO cannot honour is refused, naming
each key. The schema lets `controller` through so that the values are checked here; what is copied
into this chart's values is checked as its schema would (the schema ran before this). docs/helm.md,
"Upstream's experimental controller values", maps each key.
*/}}
{{- define "aro-controller.translateExperimentalShape" -}}
{{- $v := .Values }}
{{- if and (hasKey $v "controller") (not (hasKey $v "__aroTranslatedExperimental")) }}
{{- $_ := set $v "__aroTranslatedExperimental" true }}
{{- $c := $v.controller | default dict }}
{{- if not (kindIs "map" $c) }}{{ fail "controller must be an object: the values of upstream's gha-runner-scale-set-controller-experimental chart" }}{{ end }}
{{- $refused := list }}
{{- $unknown := list }}
{{- $setMap := dict }}
{{- range $k, $val := $c }}
{{- if not (has $k (list "replicaCount" "metadata" "manager" "serviceAccount" "pod" "metrics")) }}{{ $unknown = append $unknown (printf "controller.%s" $k) }}{{ end }}
{{- end }}

{{- if not (kindIs "invalid" $c.replicaCount) }}
{{- if not (regexMatch "^[0-9]+$" (toString $c.replicaCount)) }}{{ fail (printf "controller.replicaCount must be a whole number, got %v" $c.replicaCount) }}{{ end }}
{{- $_ := set $v "replicaCount" (int64 $c.replicaCount) }}
{{- end }}
{{- $meta := $c.metadata | default dict }}
{{- if or $meta.labels $meta.annotations }}{{ $refused = append $refused "controller.metadata (the Deployment's own labels and annotations; use labels for every object, podLabels/podAnnotations for the pod)" }}{{ end }}

{{- $manager := $c.manager | default dict }}
{{- range $k, $val := $manager }}{{ if not (has $k (list "config" "container")) }}{{ $unknown = append $unknown (printf "controller.manager.%s" $k) }}{{ end }}{{ end }}
{{- $config := $manager.config | default dict }}
{{- $flagKeys := list "logLevel" "logFormat" "watchSingleNamespace" "runnerMaxConcurrentReconciles" "excludeLabelPropagationPrefixes" "k8sClientRateLimiterQPS" "k8sClientRateLimiterBurst" "rateLimiter" "healthProbeBindAddress" }}
{{- range $k, $val := $config }}
{{- if not (has $k $flagKeys) }}
{{- $unknown = append $unknown (printf "controller.manager.config.%s" $k) }}
{{- else if not (kindIs "invalid" $val) }}
{{- $_ := set $v.flags $k $val }}
{{- end }}
{{- end }}
{{- with $config.logLevel }}
{{- if not (or (has (toString .) (list "debug" "info" "warn" "error")) (regexMatch "^-?[0-9]{1,3}$" (toString .))) }}{{ fail (printf "controller.manager.config.logLevel: %v is not a level upstream takes (debug, info, warn, error, or a number)" .) }}{{ end }}
{{- end }}
{{- with $config.logFormat }}
{{- if not (has . (list "json" "text")) }}{{ fail (printf "controller.manager.config.logFormat: %v is not json or text" .) }}{{ end }}
{{- end }}
{{- if not (kindIs "invalid" $config.runnerMaxConcurrentReconciles) }}
{{- if not (regexMatch "^[1-9][0-9]*$" (toString $config.runnerMaxConcurrentReconciles)) }}{{ fail "controller.manager.config.runnerMaxConcurrentReconciles must be a positive whole number" }}{{ end }}
{{- $_ := set $v.flags "runnerMaxConcurrentReconciles" (int64 $config.runnerMaxConcurrentReconciles) }}
{{- end }}

{{- $container := $manager.container | default dict }}
{{- range $k, $val := $container }}{{ if not (has $k (list "image" "pullPolicy" "extraArgs" "env" "securityContext" "resources" "extraPorts")) }}{{ $unknown = append $unknown (printf "controller.manager.container.%s" $k) }}{{ end }}{{ end }}
{{- with $container.image }}
{{- $image := toString . }}
{{- $repository := $image }}
{{- $tag := "" }}
{{- if regexMatch ":[^:/]+$" $image }}
{{- $tag = regexReplaceAll "^.*:" $image "" }}
{{- $repository = regexReplaceAll ":[^:/]+$" $image "" }}
{{- end }}
{{- if eq $repository (include "aro-controller.upstreamImageRepository" $) }}
{{- if not (has $tag (list "" "latest")) }}
{{- fail (printf "controller.manager.container.image %q is upstream's Go controller image: it has no aro-controller or aro-listener, so the controller and listener pods could not start. Leave it at upstream's default (ARO then runs %s) or name an ARO image" $image (include "aro-controller.defaultImageRepository" $)) }}
{{- end }}
{{- /* Upstream's default: ARO's own image, as for the classic chart's default (NOTES says so). */}}
{{- $_ := set $v.image "repository" $repository }}
{{- $_ := set $v.image "tag" "" }}
{{- else }}
{{- $_ := set $v.image "repository" $repository }}
{{- $_ := set $v.image "tag" $tag }}
{{- end }}
{{- end }}
{{- with $container.pullPolicy }}{{ $_ := set $v.image "pullPolicy" . }}{{ end }}
{{- if $container.extraArgs }}{{ $refused = append $refused "controller.manager.container.extraArgs (arguments of upstream's Go binary; ARO is configured by flags.* and env)" }}{{ end }}
{{- if $container.extraPorts }}{{ $refused = append $refused "controller.manager.container.extraPorts" }}{{ end }}
{{- if hasKey $container "env" }}{{ $_ := set $v "env" ($container.env | default list) }}{{ end }}
{{- $_ := set $setMap "securityContext" $container.securityContext }}
{{- $_ := set $setMap "resources" $container.resources }}

{{- $sa := $c.serviceAccount | default dict }}
{{- range $k, $val := $sa }}{{ if not (has $k (list "create" "annotations" "name")) }}{{ $unknown = append $unknown (printf "controller.serviceAccount.%s" $k) }}{{ end }}{{ end }}
{{- if kindIs "bool" $sa.create }}{{ $_ := set $v.serviceAccount "create" $sa.create }}{{ end }}
{{- if hasKey $sa "name" }}{{ $_ := set $v.serviceAccount "name" ($sa.name | default "") }}{{ end }}
{{- with $sa.annotations }}{{ $_ := set $v.serviceAccount "annotations" (merge (deepCopy .) ($v.serviceAccount.annotations | default dict)) }}{{ end }}

{{- $pod := $c.pod | default dict }}
{{- range $k, $val := $pod }}{{ if not (has $k (list "metadata" "spec" "volumeMounts")) }}{{ $unknown = append $unknown (printf "controller.pod.%s" $k) }}{{ end }}{{ end }}
{{- $podMeta := $pod.metadata | default dict }}
{{- range $from, $to := dict "labels" "podLabels" "annotations" "podAnnotations" }}
{{- $given := dict }}
{{- range $k, $val := (get $podMeta $from | default dict) }}{{ if not (hasPrefix "actions.github.com/" $k) }}{{ $_ := set $given $k $val }}{{ end }}{{ end }}
{{- with $given }}{{ $_ := set $setMap $to . }}{{ end }}
{{- end }}
{{- $podSpec := $pod.spec | default dict }}
{{- range $k, $val := $podSpec }}
{{- if has $k (list "nodeSelector" "affinity") }}{{ $_ := set $setMap $k $val }}
{{- else if eq $k "securityContext" }}{{ $_ := set $setMap "podSecurityContext" $val }}
{{- else if has $k (list "tolerations" "topologySpreadConstraints" "volumes") }}{{ if not (kindIs "invalid" $val) }}{{ $_ := set $v $k $val }}{{ end }}
{{- else if eq $k "priorityClassName" }}{{ with $val }}{{ $_ := set $v "priorityClassName" . }}{{ end }}
{{- else if eq $k "containers" }}{{ if $val }}{{ $refused = append $refused "controller.pod.spec.containers (extra containers beside the manager)" }}{{ end }}
{{- else if eq $k "terminationGracePeriodSeconds" }}{{ if not (kindIs "invalid" $val) }}{{ $refused = append $refused "controller.pod.spec.terminationGracePeriodSeconds (ARO sets flags.shutdownTimeoutSeconds + 15 s, so a stopping replica can drain first; set flags.shutdownTimeoutSeconds)" }}{{ end }}
{{- else if $val }}{{ $refused = append $refused (printf "controller.pod.spec.%s" $k) }}
{{- end }}
{{- end }}
{{- if hasKey $pod "volumeMounts" }}{{ $_ := set $v "volumeMounts" ($pod.volumeMounts | default list) }}{{ end }}

{{- $metrics := $c.metrics | default dict }}
{{- range $k, $val := $metrics }}
{{- if has $k (list "controllerManagerAddr" "listenerAddr" "listenerEndpoint") }}
{{- with $val }}{{ $_ := set $v.metrics $k . }}{{ end }}
{{- else }}
{{- $unknown = append $unknown (printf "controller.metrics.%s" $k) }}
{{- end }}
{{- end }}

{{- range $key, $given := $setMap }}
{{- if $given }}
{{- if not (kindIs "map" $given) }}{{ fail (printf "%s (from upstream's experimental controller values) must be an object" $key) }}{{ end }}
{{- $_ := set $v $key (merge (deepCopy $given) (get $v $key | default dict)) }}
{{- end }}
{{- end }}
{{- with $unknown }}
{{- fail (printf "%s: not a value of upstream's gha-runner-scale-set-controller-experimental chart" (join ", " .)) }}
{{- end }}
{{- with $refused }}
{{- fail (printf "%s: not translated from upstream's gha-runner-scale-set-controller-experimental values; docs/helm.md maps each key" (join "; " .)) }}
{{- end }}
{{- end }}
{{- end }}
