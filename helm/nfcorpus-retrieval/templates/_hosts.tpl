{{/* The Host headers a server of the release answers (its <PREFIX>_ALLOWED_HOSTS,
services/common/guard/hosts.py): its Service under each of its names (short, namespaced, .svc,
fully qualified), on the Service's port and, on port 80, without one; the loopback names on any
port (a port-forward's local port is the operator's choice); then the extra names given (an Ingress host, HTTPRoute hostnames, a value's
list). A request naming any other host is refused with 421 before it is read: a page that turns
its own name to the server's address (DNS rebinding) cannot drive it.
dict "root" . "component" NAME "port" PORT "extra" (list ...) */}}
{{- define "nfcorpus.allowedHosts" -}}
{{- $svc := include "nfcorpus.componentName" (dict "root" .root "component" .component) }}
{{- $ns := .root.Release.Namespace }}
{{- $port := .port | toString }}
{{- $hosts := list }}
{{- range $name := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns $.root.Values.clusterDomain) }}
{{- $hosts = append $hosts (printf "%s:%s" $name $port) }}
{{- if eq $port "80" }}
{{- $hosts = append $hosts $name }}
{{- end }}
{{- end }}
{{- concat $hosts (list "localhost:*" "127.0.0.1:*" "[::1]:*") (.extra | default list) | uniq | join "," }}
{{- end }}
