{{/* Names, labels and the small pieces every template shares. */}}

{{- define "nfcorpus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-wide name prefix; the release name alone when it already contains the chart name. */}}
{{- define "nfcorpus.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of one component's resources: (dict "root" $ "component" "mcp-server"). */}}
{{- define "nfcorpus.componentName" -}}
{{- printf "%s-%s" (include "nfcorpus.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nfcorpus.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource: (dict "root" $ "component" "mcp-server"). */}}
{{- define "nfcorpus.labels" -}}
helm.sh/chart: {{ include "nfcorpus.chart" .root }}
{{ include "nfcorpus.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: {{ include "nfcorpus.name" .root }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels a Service or controller selects pods by; stable across upgrades. */}}
{{- define "nfcorpus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nfcorpus.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "nfcorpus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nfcorpus.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is given: (dict "image" .Values.image "default" .Chart.AppVersion). */}}
{{- define "nfcorpus.imageRef" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .default .image.tag | toString) }}
{{- end }}
{{- end }}

{{- define "nfcorpus.image" -}}
{{- include "nfcorpus.imageRef" (dict "image" .Values.image "default" .Chart.AppVersion) }}
{{- end }}

{{/* The indexer's image: the Dockerfile's indexer target (the servers' image has no indexer). */}}
{{- define "nfcorpus.indexerImage" -}}
{{- include "nfcorpus.imageRef" (dict "image" .Values.indexer.image "default" .Chart.AppVersion) }}
{{- end }}

{{/* In-cluster URLs of the services. */}}
{{/* The purple agent's Service URL, fully qualified: the agent card names it, and A2A 0.3 clients
post to the card's URL from wherever they run (another namespace, a leaderboard's runner). */}}
{{- define "nfcorpus.purpleAgentUrl" -}}
{{- printf "http://%s.%s.svc.%s:%v/" (include "nfcorpus.componentName" (dict "root" . "component" "purple-agent")) .Release.Namespace .Values.clusterDomain .Values.purpleAgent.service.port }}
{{- end }}

{{/* GREEN_ALLOWED_ORIGINS of a green agent serving assessments beside the release: the release's
Services (purple agent, MCP server) under each of their names (short, namespaced, .svc, fully
qualified), on their ports. An assessment naming any other URL fails before a request goes out. */}}
{{- define "nfcorpus.greenAllowedOrigins" -}}
{{- $origins := list }}
{{- range $component, $port := dict "purple-agent" .Values.purpleAgent.service.port "mcp-server" .Values.mcpServer.service.port }}
{{- $svc := include "nfcorpus.componentName" (dict "root" $ "component" $component) }}
{{- $ns := $.Release.Namespace }}
{{- range $name := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns $.Values.clusterDomain) }}
{{- $origins = append $origins (printf "%s:%v" $name $port) }}
{{- end }}
{{- end }}
{{- join "," $origins }}
{{- end }}

{{- define "nfcorpus.mcpUrl" -}}
{{- printf "http://%s:%v/mcp" (include "nfcorpus.componentName" (dict "root" . "component" "mcp-server")) .Values.mcpServer.service.port }}
{{- end }}

{{/*
Where the index lives (.Values.store.backend, the services' RETRIEVAL_STORE with the same names):
"server" (a Qdrant server: the release's StatefulSet or qdrant.external.url, filled by the indexer
Job) or "embedded" (the index built into the image, a qdrant-edge shard opened by each MCP process:
no Qdrant, no indexer). Each helper is "true" or empty, for `if`.
*/}}
{{- define "nfcorpus.embedded" -}}
{{- if eq .Values.store.backend "embedded" }}true{{ end }}
{{- end }}

{{/* A Qdrant server is used (in the release or external). */}}
{{- define "nfcorpus.usesQdrant" -}}
{{- if eq .Values.store.backend "server" }}true{{ end }}
{{- end }}

{{/* The release runs its own Qdrant StatefulSet. */}}
{{- define "nfcorpus.qdrantInRelease" -}}
{{- if and (eq .Values.store.backend "server") (not .Values.qdrant.external.url) }}true{{ end }}
{{- end }}

{{/* The indexer Job runs: it fills a Qdrant server; the embedded index is built with the image. */}}
{{- define "nfcorpus.indexerEnabled" -}}
{{- if and .Values.indexer.enabled (eq .Values.store.backend "server") }}true{{ end }}
{{- end }}

{{- define "nfcorpus.qdrantUrl" -}}
{{- if .Values.qdrant.external.url }}
{{- .Values.qdrant.external.url }}
{{- else }}
{{- printf "http://%s:6333" (include "nfcorpus.componentName" (dict "root" . "component" "qdrant")) }}
{{- end }}
{{- end }}

{{- define "nfcorpus.qdrantHeadless" -}}
{{- printf "%s-headless" (include "nfcorpus.componentName" (dict "root" . "component" "qdrant")) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nfcorpus.qdrantApiKeySecret" -}}
{{- default (printf "%s-api-key" (include "nfcorpus.componentName" (dict "root" . "component" "qdrant"))) .Values.qdrant.apiKey.existingSecret }}
{{- end }}

{{/*
Bearer-token authentication (.Values.auth). Two tokens, each from its own existingSecret or from
the Secret the chart creates (<fullname>-auth):
  clientTokens  what the purple agent accepts from its callers;
  mcpToken      what the purple agent sends to the MCP server and the MCP server accepts.
and the tokens of the chart's own callers, one per purpose, each an item of the clientTokens
Secret and listed in its callers' tokens under the caller's name (nfcorpus.ownCallers):
  loadGeneratorToken  what the load-test generators send (caller load-generator);
  helmTestToken       what the `helm test` pod sends (caller helm-test).
Each reaches the pods as a file of a read-only Secret volume, never as an env value, and a pod
mounts only the item it uses: a generator or test pod holds no other caller's token.
*/}}

{{/* The chart's own callers: (caller name, auth.* part) pairs, as YAML {name: part}. */}}
{{- define "nfcorpus.ownCallers" -}}
load-generator: loadGeneratorToken
helm-test: helmTestToken
{{- end }}
{{- define "nfcorpus.authSecret" -}}
{{- include "nfcorpus.componentName" (dict "root" . "component" "auth") }}
{{- end }}

{{/* Secret holding one token: (dict "root" $ "part" "clientTokens"). The chart's own callers'
tokens live in the clientTokens Secret, beside the list that names them. */}}
{{- define "nfcorpus.authPartSecret" -}}
{{- $own := has .part (values (include "nfcorpus.ownCallers" . | fromYaml)) }}
{{- default (include "nfcorpus.authSecret" .root) (index .root.Values.auth (ternary "clientTokens" .part $own)).existingSecret }}
{{- end }}

{{/* Where a token's file is mounted: (dict "root" $ "part" "mcpToken"). */}}
{{- define "nfcorpus.authFile" -}}
{{- $files := dict
  "clientTokens" "client-tokens/tokens"
  "mcpToken" "mcp-token/token"
  "loadGeneratorToken" "load-generator-token/token"
  "helmTestToken" "helm-test-token/token"
}}
{{- printf "/var/run/secrets/nfcorpus/%s" (get $files .part) }}
{{- end }}

{{/* The volume of one token, as the {name, mountPath, secret} dict nfcorpus.web takes (YAML):
only the token's key is projected (items), so a shared existing Secret exposes nothing else. */}}
{{- define "nfcorpus.authVolume" -}}
{{- $part := index .root.Values.auth .part }}
{{- $file := include "nfcorpus.authFile" . }}
name: {{ base (dir $file) }}
mountPath: {{ dir $file }}
secret:
  secretName: {{ include "nfcorpus.authPartSecret" . }}
  items:
    - key: {{ $part.existingSecretKey }}
      path: {{ base $file }}
{{- end }}

{{/*
Data of the chart's own auth Secret, as YAML {key: token}: the tokens that come from no
existingSecret. A given value wins; else the token the cluster already holds (lookup), so
upgrades keep it; else a new random one. Computed once per render and kept in .Values.auth: the
Secret and the pods' checksum annotations must see the same tokens (a second randAlphaNum would
differ on install, and the first upgrade would roll every pod for nothing).
*/}}
{{- define "nfcorpus.authGenerated" -}}
{{- $auth := .Values.auth }}
{{- if not (hasKey $auth "_generated") }}
{{- $data := dict }}
{{- $held := dict }}
{{- with lookup "v1" "Secret" .Release.Namespace (include "nfcorpus.authSecret" .) }}
{{- $held = .data | default dict }}
{{- end }}
{{- $own := include "nfcorpus.ownCallers" . | fromYaml }}
{{- range $name := list "clientTokens" "mcpToken" }}
{{- $part := index $auth $name }}
{{- if not $part.existingSecret }}
{{- $token := $part.value }}
{{- if and (not $token) (hasKey $held $part.existingSecretKey) }}
{{- $token = index $held $part.existingSecretKey | b64dec }}
{{- if eq $name "clientTokens" }}
{{- /* The held list ends with the chart's own callers, added below: keep the rest only. */}}
{{- $kept := list }}
{{- range $line := splitList "\n" $token }}
{{- if not (hasKey $own (trim (initial (splitList ":" $line) | join ":"))) }}
{{- $kept = append $kept $line }}
{{- end }}
{{- end }}
{{- $token = join "\n" $kept | trim }}
{{- end }}
{{- end }}
{{- $_ := set $data $part.existingSecretKey (default (randAlphaNum 48) $token) }}
{{- end }}
{{- end }}
{{- /* The chart's own callers: a token each, as an item of its own, and a line name:token in
the callers' list, so that the agent knows them by name. With clientTokens.existingSecret the
Secret is yours, its items and its list both (the chart cannot write into it). */}}
{{- if not $auth.clientTokens.existingSecret }}
{{- $list := $auth.clientTokens.existingSecretKey }}
{{- $lines := list (trim (get $data $list)) }}
{{- range $name := keys $own | sortAlpha }}
{{- $part := index $auth (get $own $name) }}
{{- $token := $part.value }}
{{- if and (not $token) (hasKey $held $part.existingSecretKey) }}
{{- $token = index $held $part.existingSecretKey | b64dec }}
{{- end }}
{{- $token = default (randAlphaNum 48) $token }}
{{- $_ := set $data $part.existingSecretKey $token }}
{{- $lines = append $lines (printf "%s:%s" $name $token) }}
{{- end }}
{{- $_ := set $data $list (printf "%s\n" (join "\n" $lines)) }}
{{- end }}
{{- /* The scrape token of /metrics (nfcorpus.scrapeTokenVolume), made the same way. */}}
{{- with $auth.scrapeToken }}
{{- if not .existingSecret }}
{{- if hasKey $data .existingSecretKey }}
{{- fail (printf "auth.scrapeToken.existingSecretKey %q is the key of another token: /metrics needs a token of its own" .existingSecretKey) }}
{{- end }}
{{- $kept := get $held .existingSecretKey | b64dec }}
{{- $_ := set $data .existingSecretKey (.value | default $kept | default (randAlphaNum 48)) }}
{{- end }}
{{- end }}
{{- $_ := set $auth "_generated" $data }}
{{- end }}
{{- toYaml $auth._generated }}
{{- end }}

{{/* The `kubectl run` flags of a NOTES pod that sends a caller's token: the token as a file of a
Secret volume (GREEN_AGENT_TOKEN_FILE), never in the pod's spec, where anyone who may read the
pod would see it. Each line starts with a newline and ends with a continuation.
(dict "pod" "nfcorpus-eval" "secret" "nfcorpus-green-token" "dir" "/var/run/secrets/...") */}}
{{- define "nfcorpus.notesTokenMount" -}}
{{- $volume := dict "name" "agent-token" "secret" (dict "secretName" .secret) }}
{{- $mount := dict "name" "agent-token" "mountPath" .dir "readOnly" true }}
{{- $spec := dict "volumes" (list $volume) "containers" (list (dict "name" .pod "volumeMounts" (list $mount))) }}
{{ printf "       --env=GREEN_AGENT_TOKEN_FILE=%s/token \\" .dir }}
{{ printf "       --override-type=strategic --overrides='%s' \\" (dict "spec" $spec | toJson) }}
{{- end }}

{{/* The flags of the notes' green agent A2A server: the callers' tokens of its own
(GREEN_AUTH_TOKENS_FILE, Secret .callers) and, with .auth, the agent's token (Secret .secret under
.dir), each mounted as files, never in the pod's spec. */}}
{{- define "nfcorpus.notesGreenServeMounts" -}}
{{- $callersDir := "/var/run/secrets/nfcorpus/green-callers" }}
{{- $volumes := list (dict "name" "green-callers" "secret" (dict "secretName" .callers)) }}
{{- $mounts := list (dict "name" "green-callers" "mountPath" $callersDir "readOnly" true) }}
{{- if .auth }}
{{- $volumes = append $volumes (dict "name" "agent-token" "secret" (dict "secretName" .secret)) }}
{{- $mounts = append $mounts (dict "name" "agent-token" "mountPath" .dir "readOnly" true) }}
{{- end }}
{{- $spec := dict "volumes" $volumes "containers" (list (dict "name" .pod "volumeMounts" $mounts)) }}
{{ printf "       --env=GREEN_AUTH_TOKENS_FILE=%s/tokens \\" $callersDir }}
{{- if .auth }}
{{ printf "       --env=GREEN_AGENT_TOKEN_FILE=%s/token \\" .dir }}
{{- end }}
{{ printf "       --override-type=strategic --overrides='%s' \\" (dict "spec" $spec | toJson) }}
{{- end }}

{{/* The scrape token: what /metrics of the purple agent, the MCP server and the load collector
accepts and their ServiceMonitors send (.Values.auth.scrapeToken), from its existingSecret or the chart's auth Secret.
Its file, and its volume as nfcorpus.authVolume gives one; both only with auth.enabled. */}}
{{- define "nfcorpus.scrapeTokenFile" -}}
/var/run/secrets/nfcorpus/scrape-token/token
{{- end }}

{{- define "nfcorpus.scrapeTokenVolume" -}}
{{- $file := include "nfcorpus.scrapeTokenFile" . }}
name: scrape-token
mountPath: {{ dir $file }}
secret:
  secretName: {{ include "nfcorpus.authPartSecret" (dict "root" . "part" "scrapeToken") }}
  items:
    - key: {{ .Values.auth.scrapeToken.existingSecretKey }}
      path: {{ base $file }}
{{- end }}

{{/* The Secret of the load collector's token (templates/load-collector-secret.yaml). */}}
{{- define "nfcorpus.loadCollectorTokenSecret" -}}
{{- default (include "nfcorpus.componentName" (dict "root" . "component" "load-collector-token")) .Values.loadTest.collector.token.existingSecret }}
{{- end }}

{{/* sha256 of the chart-generated tokens a pod mounts, for a checksum/auth annotation that rolls
the pods when a token changes (the services read their tokens at start only); empty when every
token comes from an existingSecret, whose content the chart cannot see.
(dict "root" $ "parts" (list "clientTokens" "mcpToken")) */}}
{{- define "nfcorpus.authChecksum" -}}
{{- $generated := include "nfcorpus.authGenerated" .root | fromYaml }}
{{- $mounted := dict }}
{{- range $name := .parts }}
{{- $part := index $.root.Values.auth $name }}
{{- if not $part.existingSecret }}
{{- $_ := set $mounted $name (index $generated $part.existingSecretKey) }}
{{- end }}
{{- end }}
{{- if $mounted }}
{{- toYaml $mounted | sha256sum }}
{{- end }}
{{- end }}

{{/* Retrieval settings of the processes that search or build the index (MCP server, indexer).
RETRIEVAL_STORE is store.backend. Embedded: the store and collection the image was built with
(qdrant-edge under RETRIEVAL_EDGE_PATH), each process opening a private copy of the read-only shard
under /tmp. */}}
{{- define "nfcorpus.retrievalEnv" -}}
- name: RETRIEVAL_STORE
  value: {{ .Values.store.backend }}
{{- if include "nfcorpus.embedded" . }}
- name: RETRIEVAL_EDGE_PRIVATE_COPY
  value: "true"
{{- else }}
- name: RETRIEVAL_COLLECTION
  value: {{ .Values.retrieval.collection | quote }}
{{- end }}
{{- range $key, $value := .Values.retrieval.settings }}
- name: {{ printf "RETRIEVAL_%s" (upper $key) }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* The Secret key of the Qdrant API key a client gets: (dict "root" $ "reader" true) for one
that only reads (the read-only key, when qdrant.apiKey.readOnly.enabled), else the read-write key. */}}
{{- define "nfcorpus.qdrantKeyName" -}}
{{- $k := .root.Values.qdrant.apiKey }}
{{- if and .reader $k.readOnly.enabled }}{{ $k.readOnly.existingSecretKey }}{{ else }}{{ $k.existingSecretKey }}{{ end }}
{{- end }}

{{/* Qdrant URL and key of a client: (dict "root" $ "reader" true|false). A writer (the indexer)
also gets how it lays out the collections it creates (nfcorpus.qdrantLayout). */}}
{{- define "nfcorpus.qdrantEnv" -}}
- name: RETRIEVAL_QDRANT_URL
  value: {{ include "nfcorpus.qdrantUrl" .root | quote }}
{{- if .root.Values.qdrant.apiKey.enabled }}
- name: RETRIEVAL_QDRANT_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "nfcorpus.qdrantApiKeySecret" .root }}
      key: {{ include "nfcorpus.qdrantKeyName" . }}
{{- end }}
{{- if not .reader }}
{{- $layout := include "nfcorpus.qdrantLayout" .root | fromYaml }}
{{- range $name := keys $layout | sortAlpha }}
- name: {{ $name }}
  value: {{ get $layout $name | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* How the indexer creates a version's collections on Qdrant, as YAML {variable: value}
(services/retrieval/settings/store.py, docs/retrieval.md "On a Qdrant server"). With the
release's StatefulSet: the documents' shards and copies as qdrant.cluster gives new collections,
the peers every small collection is copied to, and gRPC on port 6334 (qdrant.grpc). With an
external Qdrant: its own defaults (retrieval.settings may name them) and gRPC only on
qdrant.external.grpcPort. Either way, where the documents are held (qdrant.collections). */}}
{{- define "nfcorpus.qdrantLayout" -}}
{{- $q := .Values.qdrant }}
{{- $env := dict
  "RETRIEVAL_QDRANT_ON_DISK_VECTORS" $q.collections.onDiskVectors
  "RETRIEVAL_QDRANT_ON_DISK_PAYLOAD" $q.collections.onDiskPayload
  "RETRIEVAL_QUANTIZATION_ALWAYS_RAM" $q.collections.quantizationAlwaysRam }}
{{- if include "nfcorpus.qdrantInRelease" . }}
{{- $_ := set $env "RETRIEVAL_QDRANT_SHARDS" (mul $q.cluster.shardNumberPerNode $q.replicaCount) }}
{{- $_ = set $env "RETRIEVAL_QDRANT_REPLICATION_FACTOR" $q.cluster.replicationFactor }}
{{- $_ = set $env "RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR" $q.cluster.writeConsistencyFactor }}
{{- $_ = set $env "RETRIEVAL_QDRANT_NODES" $q.replicaCount }}
{{- if $q.grpc }}
{{- $_ = set $env "RETRIEVAL_QDRANT_GRPC_PORT" 6334 }}
{{- end }}
{{- else if $q.external.grpcPort }}
{{- $_ := set $env "RETRIEVAL_QDRANT_GRPC_PORT" $q.external.grpcPort }}
{{- end }}
{{- toYaml $env }}
{{- end }}

{{/* Environment every process of the image shares: thread counts and OpenTelemetry.
(dict "root" $ "component" "indexer" ["threads" N]); threads defaults to .Values.computeThreads. */}}
{{- define "nfcorpus.commonEnv" -}}
{{- $threads := default .root.Values.computeThreads .threads | toString }}
- name: OMP_NUM_THREADS
  value: {{ $threads | quote }}
- name: OPENBLAS_NUM_THREADS
  value: {{ $threads | quote }}
- name: RETRIEVAL_ENCODE_THREADS
  value: {{ $threads | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "nfcorpus-%s" .component | quote }}
{{- with .root.Values.otel }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | quote }}
{{- end }}
{{- if .resourceAttributes }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ .resourceAttributes | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pod-level settings every pod of the chart shares. */}}
{{- define "nfcorpus.podSecurity" -}}
serviceAccountName: {{ include "nfcorpus.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/* One spread constraint per topology key: (dict "root" $ "component" "qdrant" "spread" .Values.qdrant.topologySpread "revisionKey" "pod-template-hash"). */}}
{{- define "nfcorpus.topologySpread" -}}
{{- if .spread.enabled }}
topologySpreadConstraints:
{{- range .spread.topologyKeys }}
  - maxSkew: {{ $.spread.maxSkew }}
    topologyKey: {{ . }}
    whenUnsatisfiable: {{ $.spread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "nfcorpus.selectorLabels" $ | nindent 8 }}
    {{- with $.revisionKey }}
    matchLabelKeys:
      - {{ . }}
    {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Scheduling knobs of a component: nodeSelector, tolerations, affinity, priorityClassName. */}}
{{- define "nfcorpus.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}

{{/* loadTest.stages in the text form of the generator's `load --stages`: each stage
[ramp:]DURATIONs:TARGET, a rate's TARGET with /s (e.g. 60s:100/s,ramp:120s:400/s). */}}
{{- define "nfcorpus.loadStages" -}}
{{- $parts := list }}
{{- range $stage := . }}
{{- $target := hasKey $stage "rate" | ternary (printf "%v/s" $stage.rate) (printf "%v" $stage.concurrency) }}
{{- $ramp := $stage.ramp | default false | ternary "ramp:" "" }}
{{- $parts = append $parts (printf "%s%vs:%s" $ramp $stage.durationSeconds $target) }}
{{- end }}
{{- join "," $parts }}
{{- end }}

{{/* An HTTP probe: (dict "path" "/readyz" "port" "http" "probe" .Values.x.probes.readiness). */}}
{{- define "nfcorpus.httpProbe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end }}

{{/* What a published route sends to the purple agent: the agent card (CARD_PATHS of
services/common/a2a.py: the root and both well-known paths) and the JSON-RPC endpoint (A2A_RPC_PATH,
the root), each matched exactly. The probes (/healthz, /readyz: the latter names the internal MCP
URL) and /metrics stay inside the cluster. */}}
{{- define "nfcorpus.publishedPaths" -}}
- /
- /.well-known/agent-card.json
- /.well-known/agent.json
{{- end }}

{{/* The port our servers serve /metrics on, and nothing else (SERVER_METRICS_PORT): a
NetworkPolicy opens ports, not paths, so Prometheus is let in on this port alone, never on the
API port (/mcp, /stats/reset, the A2A endpoint). The probes stay on the API port. */}}
{{- define "nfcorpus.metricsPort" -}}
9090
{{- end }}

{{/* Checks across values that the JSON schema cannot express. */}}
{{- define "nfcorpus.validate" -}}
{{- include "nfcorpus.validatePublishedServices" . }}
{{- include "nfcorpus.validateOneTokenPerPurpose" . }}
{{- /* A published route reaches the agent from outside the cluster: no anonymous callers and no
plain HTTP unless a value named for exactly that says so (the chart cannot see the TLS of a
Gateway's listeners, so an HTTPRoute states it). */}}
{{- with .Values.purpleAgent }}
{{- if and .httpRoute.enabled (not .httpRoute.parentRefs) }}
{{- fail "purpleAgent.httpRoute.enabled needs purpleAgent.httpRoute.parentRefs: the Gateway(s) to attach to" }}
{{- end }}
{{- range $route := list "ingress" "httpRoute" }}
{{- $v := index $.Values.purpleAgent $route }}
{{- if and $v.enabled (not $.Values.auth.enabled) (not $v.allowUnauthenticated) }}
{{- fail (printf "purpleAgent.%s publishes the purple agent, and with auth.enabled=false anyone who reaches it may call it: set auth.enabled=true (callers then send a bearer token), or purpleAgent.%s.allowUnauthenticated=true to publish an open agent on purpose" $route $route) }}
{{- end }}
{{- end }}
{{- if and .ingress.enabled (not .ingress.tlsSecretName) (not .ingress.allowPlaintext) }}
{{- fail "purpleAgent.ingress without TLS carries callers' tokens and queries in clear text: set purpleAgent.ingress.tlsSecretName (the TLS Secret of purpleAgent.ingress.host), or purpleAgent.ingress.allowPlaintext=true when plain HTTP is what you want (e.g. TLS ends before the ingress controller)" }}
{{- end }}
{{- if and .httpRoute.enabled (not .httpRoute.tlsAtGateway) (not .httpRoute.allowPlaintext) }}
{{- fail "purpleAgent.httpRoute: the chart cannot see whether the listeners of its parentRefs use TLS: set purpleAgent.httpRoute.tlsAtGateway=true when they are HTTPS listeners, or purpleAgent.httpRoute.allowPlaintext=true to publish over plain HTTP on purpose" }}
{{- end }}
{{- end }}
{{- /* store.mode was the key's name before chart 0.3.0 (qdrant | embedded): refused, whatever its
value, rather than ignored while store.backend's default picks another store. */}}
{{- if hasKey .Values.store "mode" }}
{{- $old := toString .Values.store.mode }}
{{- $new := get (dict "qdrant" "server" "embedded" "embedded") $old }}
{{- $fix := ternary (printf "set store.backend=%s instead of store.mode=%s" $new $old) "set store.backend and remove store.mode" (ne $new "") }}
{{- fail (printf "store.mode was renamed store.backend (server: a Qdrant server, the release's StatefulSet or qdrant.external.url; embedded: the index built into the image): %s" $fix) }}
{{- end }}
{{- if and (eq .Values.store.backend "embedded") .Values.qdrant.external.url }}
{{- fail "store.backend=embedded serves the index built into the image: qdrant.external.url is for store.backend=server (unset one of them)" }}
{{- end }}
{{- if and (gt (int .Values.qdrant.replicaCount) 1) (not .Values.qdrant.cluster.enabled) (not .Values.qdrant.external.url) }}
{{- fail "qdrant.replicaCount > 1 needs qdrant.cluster.enabled=true" }}
{{- end }}
{{- if and .Values.qdrant.cluster.enabled (gt (int .Values.qdrant.cluster.replicationFactor) (int .Values.qdrant.replicaCount)) }}
{{- fail "qdrant.cluster.replicationFactor cannot exceed qdrant.replicaCount" }}
{{- end }}
{{- /* The indexer asks the release's Qdrant for these copies explicitly (nfcorpus.qdrantLayout),
and refuses at start what no peer set can hold: refused here instead of a crash-looping Job. */}}
{{- if include "nfcorpus.qdrantInRelease" . }}
{{- with .Values.qdrant }}
{{- if gt (int .cluster.replicationFactor) (int .replicaCount) }}
{{- fail (printf "qdrant.cluster.replicationFactor (%d) cannot exceed qdrant.replicaCount (%d): each copy of a shard needs a peer of its own" (int .cluster.replicationFactor) (int .replicaCount)) }}
{{- end }}
{{- if gt (int .cluster.writeConsistencyFactor) (int .cluster.replicationFactor) }}
{{- fail (printf "qdrant.cluster.writeConsistencyFactor (%d) cannot exceed qdrant.cluster.replicationFactor (%d): a write would wait for copies that do not exist" (int .cluster.writeConsistencyFactor) (int .cluster.replicationFactor)) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* retrieval.settings reaches the indexer too: a variable the chart sets from qdrant.* would be
set twice there, the chart's value silently lost or kept. */}}
{{- if include "nfcorpus.usesQdrant" . }}
{{- $layout := include "nfcorpus.qdrantLayout" . | fromYaml }}
{{- range $key, $_ := .Values.retrieval.settings }}
{{- $name := printf "RETRIEVAL_%s" (upper $key) }}
{{- if hasKey $layout $name }}
{{- fail (printf "retrieval.settings.%s: the chart sets %s for the indexer from qdrant.* (qdrant.cluster, qdrant.replicaCount, qdrant.grpc, qdrant.external.grpcPort, qdrant.collections): set it there" $key $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.qdrant.external.url .Values.qdrant.apiKey.enabled (not .Values.qdrant.apiKey.existingSecret) (not .Values.qdrant.apiKey.value) }}
{{- fail "an external Qdrant needs qdrant.apiKey.existingSecret or qdrant.apiKey.value (or qdrant.apiKey.enabled=false)" }}
{{- end }}
{{- with .Values.loadTest }}
{{- if and .enabled (eq (int .collector.port) (int (include "nfcorpus.metricsPort" $))) }}
{{- fail (printf "loadTest.collector.port %d is the metrics port every server of the chart serves /metrics on: give the collector another port" (int .collector.port)) }}
{{- end }}
{{- if and .enabled (not .stages) (not .rate) (lt (int .concurrency) (int .workers)) }}
{{- fail "loadTest.concurrency is split across loadTest.workers: give every worker at least one request in flight (concurrency >= workers), or set loadTest.rate" }}
{{- end }}
{{- if and .enabled .stages }}
{{- $workers := int .workers }}
{{- $kinds := dict }}
{{- $seconds := float64 .warmupSeconds }}
{{- $load := 0.0 }}
{{- range $i, $stage := .stages }}
{{- $kind := hasKey $stage "rate" | ternary "rate" "concurrency" }}
{{- $_ := set $kinds $kind true }}
{{- $target := float64 (get $stage $kind) }}
{{- $load = addf $load $target }}
{{- $seconds = addf $seconds $stage.durationSeconds }}
{{- if and (eq $kind "concurrency") (gt $target 0.0) (lt (int $target) $workers) }}
{{- fail (printf "loadTest.stages[%d].concurrency is split across loadTest.workers: give every worker at least one request in flight (%v >= %d), or 0 for a pause" $i $target $workers) }}
{{- end }}
{{- end }}
{{- if gt (len $kinds) 1 }}
{{- fail "loadTest.stages: every stage has a rate (open loop) or every stage a concurrency (closed loop), not both" }}
{{- end }}
{{- $first := first .stages }}
{{- if and .warmupSeconds (eq (float64 (get $first (hasKey $first "rate" | ternary "rate" "concurrency"))) 0.0) }}
{{- fail "loadTest.warmupSeconds runs at the first stage's target, and it is 0: start with a stage above 0" }}
{{- end }}
{{- if eq $load 0.0 }}
{{- fail "loadTest.stages: every target is 0, the stages ask for no load" }}
{{- end }}
{{- if gt $seconds 3600.0 }}
{{- fail (printf "loadTest.stages and loadTest.warmupSeconds run %v s; a load runs 3600 s at most" $seconds) }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.auth }}
{{- if .enabled }}
{{- if and (not .clientTokens.existingSecret) (not .mcpToken.existingSecret) (eq .clientTokens.existingSecretKey .mcpToken.existingSecretKey) }}
{{- fail "auth.clientTokens.existingSecretKey and auth.mcpToken.existingSecretKey name the same key of the chart's auth Secret: make them differ" }}
{{- end }}
{{- /* The chart's own callers' tokens are items of the clientTokens Secret, beside its list. */}}
{{- $own := include "nfcorpus.ownCallers" $ | fromYaml }}
{{- $keys := list .clientTokens.existingSecretKey }}
{{- if eq .clientTokens.existingSecret .mcpToken.existingSecret }}{{ $keys = append $keys .mcpToken.existingSecretKey }}{{ end }}
{{- range $name := keys $own | sortAlpha }}
{{- $part := get $own $name }}
{{- $key := (index $.Values.auth $part).existingSecretKey }}
{{- if has $key $keys }}
{{- fail (printf "auth.%s.existingSecretKey (%s) names a key another token of the same Secret uses: make them differ" $part $key) }}
{{- end }}
{{- $keys = append $keys $key }}
{{- end }}
{{- if not .clientTokens.existingSecret }}
{{- range $line := splitList "\n" .clientTokens.value }}
{{- $name := trim (initial (splitList ":" $line) | join ":") }}
{{- if and (not (hasPrefix "#" (trim $line))) (hasKey $own $name) }}
{{- fail (printf "auth.clientTokens.value: %s is the name of one of the chart's own callers, which the chart lists itself with its token auth.%s: give your caller another name" $name (get $own $name)) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* The services refuse short tokens at start; refuse them at install instead of crash-looping. */}}
{{- range $line := splitList "\n" .clientTokens.value }}
{{- $line = trim $line }}
{{- if and $line (not (hasPrefix "#" $line)) (lt (len (trim (last (splitList ":" $line)))) 16) }}
{{- fail "auth.clientTokens.value: every token needs at least 16 characters (one per line, name:token)" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}


{{/* A Service of type NodePort or LoadBalancer publishes every port and path of its pods outside
the cluster, over plain HTTP: the probes (/readyz names the internal MCP URL), and on the MCP
server /mcp and /stats/reset. Like a published route, refused unless a value named for exactly
that says so; the purple agent then needs authentication as a route does, and the MCP server and
Qdrant, which only the release's own pods need, both authentication and the named value. The
metrics port is on a ClusterIP Service of its own, so a published Service never carries it. */}}
{{- define "nfcorpus.validatePublishedServices" -}}
{{- with .Values.purpleAgent.service }}
{{- if ne .type "ClusterIP" }}
{{- if not .allowPublish }}
{{- fail (printf "purpleAgent.service.type=%s publishes every path of the purple agent (its probes included) outside the cluster over plain HTTP: keep ClusterIP and publish through purpleAgent.ingress or purpleAgent.httpRoute (the agent card and JSON-RPC only, with TLS), or set purpleAgent.service.allowPublish=true to publish the Service on purpose" .type) }}
{{- end }}
{{- if and (not $.Values.auth.enabled) (not .allowUnauthenticated) }}
{{- fail (printf "purpleAgent.service.type=%s publishes the purple agent, and with auth.enabled=false anyone who reaches it may call it: set auth.enabled=true (callers then send a bearer token), or purpleAgent.service.allowUnauthenticated=true to publish an open agent on purpose" .type) }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.mcpServer.service }}
{{- if and (ne .type "ClusterIP") (not (and .allowPublish $.Values.auth.enabled)) }}
{{- fail (printf "mcpServer.service.type=%s publishes the MCP server outside the cluster over plain HTTP (/mcp, /search_nfcorpus, and /stats/reset, which resets the count an evaluator reports); only the purple agent calls it: keep ClusterIP, or set both auth.enabled=true and mcpServer.service.allowPublish=true to publish it on purpose" .type) }}
{{- end }}
{{- end }}
{{- if include "nfcorpus.qdrantInRelease" . }}
{{- with .Values.qdrant.service }}
{{- if and (ne .type "ClusterIP") (not (and .allowPublish $.Values.qdrant.apiKey.enabled)) }}
{{- fail (printf "qdrant.service.type=%s publishes Qdrant's API outside the cluster over plain HTTP (whoever holds a key may read, write or drop the collection); only the MCP server and the indexer call it: keep ClusterIP, or set both qdrant.apiKey.enabled=true and qdrant.service.allowPublish=true to publish it on purpose" .type) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* Qdrant serves /metrics on its API port: letting Prometheus scrape it opens the whole API. */}}
{{- if and .Values.qdrant.scrapeApiPort (not .Values.qdrant.apiKey.enabled) }}
{{- fail "qdrant.scrapeApiPort opens Qdrant's API port (where Qdrant serves /metrics) to networkPolicy.metricsFrom, and with qdrant.apiKey.enabled=false anyone there may write or drop the collection: set qdrant.apiKey.enabled=true, or leave qdrant.scrapeApiPort off" }}
{{- end }}
{{- end }}

{{/* One token value per purpose: the same value given for two (a caller's and the MCP token, the
scrape token and Qdrant's key, ...) would let whoever holds it for one use it for the other, and
revoking it for one would close both. Refused naming the two values, never the token. The
generated tokens are random, each its own. */}}
{{- define "nfcorpus.validateOneTokenPerPurpose" -}}
{{- $given := list }}
{{- range $line := splitList "\n" .Values.auth.clientTokens.value }}
{{- $line = trim $line }}
{{- if and $line (not (hasPrefix "#" $line)) }}
{{- $given = append $given (list "auth.clientTokens.value" (trim (last (splitList ":" $line)))) }}
{{- end }}
{{- end }}
{{- range $part := list "loadGeneratorToken" "helmTestToken" "mcpToken" "scrapeToken" }}
{{- with (index $.Values.auth $part | default dict).value }}
{{- $given = append $given (list (printf "auth.%s.value" $part) .) }}
{{- end }}
{{- end }}
{{- with .Values.loadTest.collector.token.value }}
{{- $given = append $given (list "loadTest.collector.token.value" .) }}
{{- end }}
{{- with .Values.qdrant.apiKey.value }}
{{- $given = append $given (list "qdrant.apiKey.value" .) }}
{{- end }}
{{- with .Values.qdrant.apiKey.readOnly.value }}
{{- $given = append $given (list "qdrant.apiKey.readOnly.value" .) }}
{{- end }}
{{- $seen := dict }}
{{- range $pair := $given }}
{{- $purpose := index $pair 0 }}
{{- $token := index $pair 1 }}
{{- $first := get $seen $token }}
{{- if and $first (ne $first $purpose) }}
{{- fail (printf "%s and %s give the same token: give each purpose a token of its own, so that a token that leaks or is revoked opens or closes one door only" $first $purpose) }}
{{- end }}
{{- $_ := set $seen $token $purpose }}
{{- end }}
{{- end }}
