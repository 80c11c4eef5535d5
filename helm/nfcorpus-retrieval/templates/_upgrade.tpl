{{/*
Upgrades with --reuse-values. Helm then renders the new templates over the old chart's values
(its values.yaml and the release's own settings) instead of the new values.yaml, so a value added
since the release's chart version is missing, and a template reading it would render nil or fail.
nfcorpus.addedValues fills in the defaults of every value added since chart 0.3.0
(files/added-values.yaml, values.yaml's own) where a key is missing, and nowhere else: a value
that is set, to anything, is kept, so a fresh install renders as it would without it. Every
template includes it first: Helm hands the templates one .Values but renders them in an order of
its own, and filling twice changes nothing. Like nfcorpus.authGenerated, it writes into .Values
for the rest of the render, never into the release's stored values.
*/}}
{{- define "nfcorpus.addedValues" -}}
{{- include "nfcorpus.fillMissing" (list .Values (.Files.Get "files/added-values.yaml" | fromYaml)) }}
{{- end }}

{{/* Set in the map (index . 0) every key of the map (index . 1) it lacks, recursing into the maps
both hold. Sprig's merge is no use here: it also replaces false, 0 and "", values set on purpose. */}}
{{- define "nfcorpus.fillMissing" -}}
{{- $into := index . 0 }}
{{- range $key, $default := index . 1 }}
{{- if not (hasKey $into $key) }}
{{- $_ := set $into $key $default }}
{{- else if and (kindIs "map" $default) (kindIs "map" (get $into $key)) }}
{{- include "nfcorpus.fillMissing" (list (get $into $key) $default) }}
{{- end }}
{{- end }}
{{- end }}
