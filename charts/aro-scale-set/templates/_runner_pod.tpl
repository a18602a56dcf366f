{{/*
The runner pod template's spec: `template.spec` with what `containerMode` and `githubServerTLS` add,
in upstream's shapes. Whatever the user already set (an env var, a mount, a volume of the same name)
is kept, never overwritten. Built as data (dicts and lists), then printed once.
*/}}
{{- define "aro-scale-set.runnerPodSpec" -}}
{{- $spec := deepCopy (default (dict) .Values.template.spec) }}
{{- $mode := include "aro-scale-set.containerModeType" . }}
{{- $tls := default (dict) .Values.githubServerTLS }}
{{- $tlsKey := "" }}
{{- if $tls.runnerMountPath }}
{{- $tlsKey = required "githubServerTLS.certificateFrom.configMapKeyRef.key is required with githubServerTLS.runnerMountPath" (dig "certificateFrom" "configMapKeyRef" "key" "" $tls) }}
{{- end }}
{{- $containers := default (list) $spec.containers }}
{{- $runner := dict }}
{{- range $containers }}{{ if eq .name "runner" }}{{ $runner = . }}{{ end }}{{ end }}
{{- if not $runner.name }}
{{- fail "template.spec.containers needs a container named \"runner\"" }}
{{- end }}

{{- /* What the runner container gets, each unless the user set it already. */}}
{{- $addEnv := list }}
{{- $addMounts := list }}
{{- if eq $mode "dind" }}
{{- $addEnv = list (dict "name" "DOCKER_HOST" "value" "unix:///var/run/docker.sock") (dict "name" "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS" "value" "120") }}
{{- $addMounts = list (dict "name" "work" "mountPath" "/home/runner/_work") (dict "name" "dind-sock" "mountPath" "/var/run") }}
{{- else if eq $mode "kubernetes" }}
{{- $addEnv = list (dict "name" "ACTIONS_RUNNER_CONTAINER_HOOKS" "value" "/home/runner/k8s/index.js") (dict "name" "ACTIONS_RUNNER_POD_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name"))) (dict "name" "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER" "value" "true") }}
{{- $addMounts = list (dict "name" "work" "mountPath" "/home/runner/_work") }}
{{- else if eq $mode "kubernetes-novolume" }}
{{- $addEnv = list (dict "name" "ACTIONS_RUNNER_CONTAINER_HOOKS" "value" "/home/runner/k8s-novolume/index.js") (dict "name" "ACTIONS_RUNNER_POD_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name"))) (dict "name" "ACTIONS_RUNNER_IMAGE" "value" $runner.image) (dict "name" "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER" "value" "true") }}
{{- end }}
{{- if $tls.runnerMountPath }}
{{- $certPath := clean (printf "%s/%s" $tls.runnerMountPath $tlsKey) }}
{{- $addEnv = concat $addEnv (list (dict "name" "NODE_EXTRA_CA_CERTS" "value" $certPath) (dict "name" "RUNNER_UPDATE_CA_CERTS" "value" "1")) }}
{{- $addMounts = append $addMounts (dict "name" "github-server-tls-cert" "mountPath" $certPath "subPath" $tlsKey) }}
{{- end }}

{{- $newContainers := list }}
{{- range $c := $containers }}
{{- if eq $c.name "runner" }}
{{- $env := default (list) $c.env }}
{{- $names := list }}{{ range $env }}{{ $names = append $names .name }}{{ end }}
{{- range $addEnv }}{{ if not (has .name $names) }}{{ $env = append $env . }}{{ end }}{{ end }}
{{- $mounts := default (list) $c.volumeMounts }}
{{- $mountNames := list }}{{ range $mounts }}{{ $mountNames = append $mountNames .name }}{{ end }}
{{- range $addMounts }}{{ if not (has .name $mountNames) }}{{ $mounts = append $mounts . }}{{ end }}{{ end }}
{{- $c = deepCopy $c }}
{{- if $env }}{{ $_ := set $c "env" $env }}{{ end }}
{{- if $mounts }}{{ $_ := set $c "volumeMounts" $mounts }}{{ end }}
{{- $newContainers = append $newContainers $c }}
{{- else }}
{{- $newContainers = append $newContainers $c }}
{{- end }}
{{- end }}
{{- $_ := set $spec "containers" $newContainers }}

{{- /* dind: the externals copy, then Docker as a native sidecar (restartPolicy Always, Kubernetes >= 1.29). */}}
{{- if eq $mode "dind" }}
{{- $init := list
  (dict "name" "init-dind-externals" "image" $runner.image
        "command" (list "cp" "-r" "/home/runner/externals/." "/home/runner/tmpDir/")
        "volumeMounts" (list (dict "name" "dind-externals" "mountPath" "/home/runner/tmpDir")))
  (dict "name" "dind" "image" "docker:dind"
        "args" (list "dockerd" "--host=unix:///var/run/docker.sock" "--group=$(DOCKER_GROUP_GID)")
        "env" (list (dict "name" "DOCKER_GROUP_GID" "value" "123"))
        "securityContext" (dict "privileged" true)
        "restartPolicy" "Always"
        "startupProbe" (dict "exec" (dict "command" (list "docker" "info")) "initialDelaySeconds" 0 "failureThreshold" 24 "periodSeconds" 5)
        "volumeMounts" (list (dict "name" "work" "mountPath" "/home/runner/_work") (dict "name" "dind-sock" "mountPath" "/var/run") (dict "name" "dind-externals" "mountPath" "/home/runner/externals"))) }}
{{- $userInit := default (list) $spec.initContainers }}
{{- if .Values.__aroInitContainersBeforeDind }}
{{- /* Upstream's experimental chart's order: the user's init containers run before Docker starts. */}}
{{- $_ := set $spec "initContainers" (concat (list (first $init)) $userInit (list (last $init))) }}
{{- else }}
{{- $_ := set $spec "initContainers" (concat $init $userInit) }}
{{- end }}
{{- end }}

{{- /* Volumes: the user's first; the mode's and TLS's only where the user has none of that name. */}}
{{- $volumes := default (list) $spec.volumes }}
{{- $volumeNames := list }}{{ range $volumes }}{{ $volumeNames = append $volumeNames .name }}{{ end }}
{{- $addVolumes := list }}
{{- if eq $mode "dind" }}
{{- $addVolumes = list (dict "name" "work" "emptyDir" (dict)) (dict "name" "dind-sock" "emptyDir" (dict)) (dict "name" "dind-externals" "emptyDir" (dict)) }}
{{- else if and (eq $mode "kubernetes") (not (has "work" $volumeNames)) }}
{{- $claim := required "containerMode.kubernetesModeWorkVolumeClaim is required with containerMode.type=kubernetes (or give template.spec.volumes a volume named work)" (dig "kubernetesModeWorkVolumeClaim" nil .Values.containerMode) }}
{{- $addVolumes = list (dict "name" "work" "ephemeral" (dict "volumeClaimTemplate" (dict "spec" $claim))) }}
{{- end }}
{{- if $tls.runnerMountPath }}
{{- $addVolumes = append $addVolumes (dict "name" "github-server-tls-cert" "configMap" (dict "name" $tls.certificateFrom.configMapKeyRef.name "items" (list (dict "key" $tlsKey "path" $tlsKey)))) }}
{{- end }}
{{- range $addVolumes }}{{ if not (has .name $volumeNames) }}{{ $volumes = append $volumes . }}{{ end }}{{ end }}
{{- if $volumes }}
{{- $_ := set $spec "volumes" $volumes }}
{{- end }}

{{- if not $spec.restartPolicy }}
{{- $_ := set $spec "restartPolicy" "Never" }}
{{- end }}
{{- $_ := set $spec "serviceAccountName" (include "aro-scale-set.runnerServiceAccountName" .) }}
{{- toYaml $spec }}
{{- end }}
