{{/*
The indexer's pods: templates/indexer-job.yaml and, with indexer.parallelism N > 1,
templates/indexer-slices-job.yaml.

N = 1: one Job encodes the corpus and writes the collection. N > 1: an Indexed Job of N pods
encodes it, pod I (its completion index, JOB_COMPLETION_INDEX, which Kubernetes sets) the chunks
of slice I of N, into the vector checkpoints of the cache on indexer.data's claim; the Job of
N = 1, started beside them, is then the finishing step (`--finish`): it waits for every chunk's
checkpoint, writes the collection, trains the ranker and moves the alias
(services/retrieval/indexing/index.py). Both read the same data and cache through the helpers
below, so they cannot disagree on where the vectors are.
*/}}

{{/* The encoding is spread over an Indexed Job's pods: "true" or empty, for `if`. */}}
{{- define "nfcorpus.indexerSliced" -}}
{{- if gt (int .Values.indexer.parallelism) 1 }}true{{ end }}
{{- end }}

{{/* Seconds the slices may encode, and the finishing step waits for them: the deadline less the
finishing step's own share. It starts waiting a little after the slices' Job starts (Qdrant, a
read of the corpus), so when it gives up, every slice has finished or been stopped. */}}
{{- define "nfcorpus.indexerSliceSeconds" -}}
{{- sub (int .Values.indexer.activeDeadlineSeconds) (int .Values.indexer.finishSeconds) }}
{{- end }}

{{/* Checks of the indexer's values that the JSON schema cannot express. */}}
{{- define "nfcorpus.validateIndexer" -}}
{{- $i := .Values.indexer }}
{{- if include "nfcorpus.indexerSliced" . }}
{{- if not $i.data.existingClaim }}
{{- fail (printf "indexer.parallelism=%d needs indexer.data.existingClaim: the slices' pods and the finishing step share the encoded vectors through the cache on that claim, and an emptyDir is each pod's own. Give a claim (ReadWriteMany when the pods may run on different nodes), or set indexer.parallelism=1" (int $i.parallelism)) }}
{{- end }}
{{- if ge (int $i.finishSeconds) (int $i.activeDeadlineSeconds) }}
{{- fail (printf "indexer.finishSeconds (%d) leaves the slices no time: with indexer.parallelism > 1 they get indexer.activeDeadlineSeconds (%d) less it; raise the deadline or lower indexer.finishSeconds" (int $i.finishSeconds) (int $i.activeDeadlineSeconds)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Env of an indexer container: (dict "root" $ "component" "indexer" "threads" N "part" P),
P "build" (N = 1: encode and write), "finish" (the finishing step) or "slice" (one slice's pod). */}}
{{- define "nfcorpus.indexerEnv" -}}
{{- $root := .root }}
{{- $i := $root.Values.indexer }}
{{- include "nfcorpus.commonEnv" (dict "root" $root "component" .component "threads" .threads) | trim }}
{{ include "nfcorpus.retrievalEnv" $root | trim }}
{{- if eq .part "slice" }}
# A slice never opens the store (no key, no egress to Qdrant); the settings still want a server
# backend's location.
- name: RETRIEVAL_QDRANT_URL
  value: {{ include "nfcorpus.qdrantUrl" $root | quote }}
{{- else }}
{{ include "nfcorpus.qdrantEnv" (dict "root" $root "reader" false) | trim }}
{{- end }}
# Without files there, the loader downloads and checks the BEIR archive.
- name: RETRIEVAL_DATA_DIR
  value: /data/nfcorpus
# Next to the data: with a claim, a re-run reuses the computed vectors.
- name: RETRIEVAL_CACHE_DIR
  value: /data/cache
{{- with $i.data.downloadUrl }}
- name: RETRIEVAL_DOWNLOAD_URL
  value: {{ . | quote }}
{{- end }}
{{- if ne .part "build" }}
- name: RETRIEVAL_INDEX_SLICES
  value: {{ $i.parallelism | quote }}
{{- end }}
{{- if eq .part "finish" }}
- name: RETRIEVAL_INDEX_WAIT_SECONDS
  value: {{ include "nfcorpus.indexerSliceSeconds" $root | quote }}
{{- end }}
{{- with $i.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The indexer's data volume (the corpus and the vector cache) and /tmp, as volumeMounts. */}}
{{- define "nfcorpus.indexerVolumeMounts" -}}
- name: data
  mountPath: /data
  {{- with .Values.indexer.data.subPath }}
  subPath: {{ . }}
  {{- end }}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* The volumes of nfcorpus.indexerVolumeMounts. */}}
{{- define "nfcorpus.indexerVolumes" -}}
{{- $data := .Values.indexer.data }}
- name: data
  {{- if $data.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ $data.existingClaim }}
  {{- else }}
  emptyDir:
    sizeLimit: {{ $data.sizeLimit }}
  {{- end }}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- end }}
