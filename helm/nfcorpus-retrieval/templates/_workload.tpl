{{/*
The stateless HTTP services (purple agent, MCP server) share one shape: a gunicorn Deployment with
probes on /healthz and /readyz, a Service, a ClusterIP Service of the metrics port (/metrics
alone), an optional HPA and PDB. Each template below takes
  (dict "root" $ "component" "mcp-server" "values" .Values.mcpServer
        "app" "services.mcp_server.asgi:app" "containerPort" 8000
        "env" <rendered EnvVar list> "volumes" <list of volumes> ["annotations" <dict>])
A volume is {name, mountPath, sizeLimit} (an emptyDir) or {name, mountPath, secret} (a Secret
volume source, mounted read-only). "annotations" are the chart's own pod annotations (checksums);
they win over .values.podAnnotations on a clash.
*/}}

{{- define "nfcorpus.web.deployment" -}}
{{- $v := .values -}}
{{- $annotations := merge (dict) (.annotations | default dict) ($v.podAnnotations | default dict) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "nfcorpus.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "nfcorpus.labels" . | nindent 4 }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # New pods must be Ready before old ones go: capacity never drops during a rollout.
      maxSurge: 25%
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "nfcorpus.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "nfcorpus.selectorLabels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- include "nfcorpus.podSecurity" .root | trim | nindent 6 }}
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      {{- with include "nfcorpus.topologySpread" (dict "root" .root "component" .component "spread" $v.topologySpread "revisionKey" "pod-template-hash") | trim }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- with include "nfcorpus.scheduling" $v | trim }}
      {{- . | nindent 6 }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "nfcorpus.image" .root | quote }}
          imagePullPolicy: {{ .root.Values.image.pullPolicy }}
          command:
            - gunicorn
            - --config
            - /etc/nfcorpus/gunicorn.conf.py
            - --bind
            - {{ printf "0.0.0.0:%v" .containerPort | quote }}
            - --workers
            - {{ $v.workers | quote }}
            - {{ .app }}
          ports:
            - name: http
              containerPort: {{ .containerPort }}
              protocol: TCP
            # /metrics alone (and no /metrics on http): what Prometheus may reach.
            - name: metrics
              containerPort: {{ include "nfcorpus.metricsPort" .root }}
              protocol: TCP
          env:
            {{- include "nfcorpus.commonEnv" . | trim | nindent 12 }}
            - name: SERVER_DRAIN_S
              value: {{ $v.drainSeconds | quote }}
            - name: SERVER_METRICS_PORT
              value: {{ include "nfcorpus.metricsPort" .root | quote }}
            {{- .env | trim | nindent 12 }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          startupProbe:
            {{- include "nfcorpus.httpProbe" (dict "path" "/healthz" "port" "http" "probe" $v.probes.startup) | nindent 12 }}
          readinessProbe:
            {{- include "nfcorpus.httpProbe" (dict "path" "/readyz" "port" "http" "probe" $v.probes.readiness) | nindent 12 }}
          livenessProbe:
            {{- include "nfcorpus.httpProbe" (dict "path" "/healthz" "port" "http" "probe" $v.probes.liveness) | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml .root.Values.securityContext | nindent 12 }}
          {{- with $v.lifecycle }}
          lifecycle:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            {{- range .volumes }}
            - name: {{ .name }}
              mountPath: {{ .mountPath }}
              {{- if .secret }}
              readOnly: true
              {{- end }}
            {{- end }}
      volumes:
        {{- range .volumes }}
        - name: {{ .name }}
          {{- if .secret }}
          secret:
            {{- toYaml .secret | nindent 12 }}
          {{- else }}
          emptyDir:
            sizeLimit: {{ .sizeLimit }}
          {{- end }}
        {{- end }}
{{- end }}

{{- define "nfcorpus.web.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "nfcorpus.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "nfcorpus.labels" . | nindent 4 }}
  {{- with .values.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .values.service.type }}
  selector:
    {{- include "nfcorpus.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ .values.service.port }}
      targetPort: http
      protocol: TCP
{{- end }}

{{/* The metrics port's Service, ClusterIP whatever service.type says: the ServiceMonitor scrapes
it, and publishing the API's Service (allowPublish) never publishes /metrics. */}}
{{- define "nfcorpus.web.metricsService" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ printf "%s-metrics" (include "nfcorpus.componentName" .) | trunc 63 | trimSuffix "-" }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "nfcorpus.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "nfcorpus.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ include "nfcorpus.metricsPort" .root }}
      targetPort: metrics
      protocol: TCP
{{- end }}

{{- define "nfcorpus.web.hpa" -}}
{{- $a := .values.autoscaling -}}
{{- if $a.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "nfcorpus.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "nfcorpus.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "nfcorpus.componentName" . }}
  minReplicas: {{ $a.minReplicas }}
  maxReplicas: {{ $a.maxReplicas }}
  metrics:
    {{- with $a.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- range $a.podsMetrics }}
    - type: Pods
      pods:
        metric:
          name: {{ .name }}
        target:
          type: AverageValue
          averageValue: {{ .averageValue | quote }}
    {{- end }}
  {{- with $a.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* A PodDisruptionBudget for any component: (dict "root" $ "component" "qdrant" "values" .Values.qdrant). */}}
{{- define "nfcorpus.pdb" -}}
{{- if .values.podDisruptionBudget.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "nfcorpus.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "nfcorpus.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .values.podDisruptionBudget.maxUnavailable }}
  {{- with .values.podDisruptionBudget.unhealthyPodEvictionPolicy }}
  unhealthyPodEvictionPolicy: {{ . }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "nfcorpus.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* Deployment, Services (the API's, the metrics port's), HPA and PDB of one web component, as
one YAML stream. */}}
{{- define "nfcorpus.web" -}}
{{ include "nfcorpus.web.deployment" . }}
---
{{ include "nfcorpus.web.service" . }}
---
{{ include "nfcorpus.web.metricsService" . }}
{{- with include "nfcorpus.web.hpa" . | trim }}
---
{{ . }}
{{- end }}
{{- with include "nfcorpus.pdb" . | trim }}
---
{{ . }}
{{- end }}
{{- end }}
