{{/* Chart name, cut to 63 characters (the DNS label limit every name here must respect). */}}
{{- define "lore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart>, or the release name alone when it already contains the chart name. */}}
{{- define "lore.fullname" -}}
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

{{/*
Name of one component's resources: <fullname>-<component>, at most 63 characters. When cutting is needed the
full name is shortened, never the component, so two components can never collide.
*/}}
{{- define "lore.componentName" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $max := sub 62 (len $component) | int }}
{{- printf "%s-%s" (include "lore.fullname" $root | trunc $max | trimSuffix "-") $component }}
{{- end }}

{{- define "lore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every resource. */}}
{{- define "lore.labels" -}}
helm.sh/chart: {{ include "lore.chart" . }}
app.kubernetes.io/name: {{ include "lore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: lore
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one component (args: root, component). */}}
{{- define "lore.componentLabels" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 -}}
{{ include "lore.labels" $root }}
app.kubernetes.io/component: {{ $component }}
{{- end }}

{{/* Selector labels of one component: stable across upgrades (never the version). */}}
{{- define "lore.selectorLabels" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 -}}
app.kubernetes.io/name: {{ include "lore.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $component }}
{{- end }}

{{- define "lore.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding URLs and secrets: the user's, or the one the chart creates. */}}
{{- define "lore.secretName" -}}
{{- default (include "lore.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "lore.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "lore.componentName" (list . "operator")) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" when a component runs, else empty (args: root, component): its values' `enabled`; graph-worker's values are
graphWorker, core-worker's are core.worker, which runs only with core, and agents-worker's are agents.worker, which
runs only with agents.
*/}}
{{- define "lore.componentEnabled" -}}
{{- $v := (index . 0).Values }}
{{- $component := index . 1 }}
{{- if eq $component "graph-worker" }}
{{- if $v.graphWorker.enabled }}true{{ end }}
{{- else if eq $component "core-worker" }}
{{- if and $v.core.enabled $v.core.worker.enabled }}true{{ end }}
{{- else if eq $component "agents-worker" }}
{{- if and $v.agents.enabled $v.agents.worker.enabled }}true{{ end }}
{{- else if (index $v $component).enabled }}true{{ end }}
{{- end }}

{{/* In-cluster URL of a component's Service (args: root, component, port). */}}
{{- define "lore.serviceUrl" -}}
{{- $root := index . 0 }}
{{- printf "http://%s.%s.svc:%v" (include "lore.componentName" (list $root (index . 1))) $root.Release.Namespace (index . 2) }}
{{- end }}

{{/* Checksums of the configuration a pod reads, so a change of values rolls the pods. */}}
{{- define "lore.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}

{{/* Environment every Lore process gets: logging, tracing, extra variables. */}}
{{- define "lore.commonEnv" -}}
- name: NODE_ENV
  value: production
- name: LOG_LEVEL
  valueFrom: { configMapKeyRef: { name: {{ include "lore.fullname" . }}, key: log-level } }
- name: LORE_LOG_LEVEL
  valueFrom: { configMapKeyRef: { name: {{ include "lore.fullname" . }}, key: log-level } }
{{- if .Values.config.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  valueFrom: { configMapKeyRef: { name: {{ include "lore.fullname" . }}, key: otlp-endpoint } }
{{- end }}
{{- with .Values.config.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
What the platform services need besides (args: dict with root, redis, kafka, identity): the database always;
Redis, Kafka and the identity secret only for the components that read them, so no pod holds a secret or an
address it never uses.
*/}}
{{- define "lore.platformEnv" -}}
{{- $root := .root }}
- name: LORE_DATABASE_URL
  valueFrom: { secretKeyRef: { name: {{ include "lore.secretName" $root }}, key: database-url } }
{{- if .redis }}
- name: LORE_REDIS_URL
  valueFrom: { secretKeyRef: { name: {{ include "lore.secretName" $root }}, key: redis-url } }
{{- end }}
{{- if .kafka }}
- name: LORE_KAFKA_BROKERS
  valueFrom: { configMapKeyRef: { name: {{ include "lore.fullname" $root }}, key: kafka-brokers } }
- name: LORE_KAFKA_PREFIX
  valueFrom: { configMapKeyRef: { name: {{ include "lore.fullname" $root }}, key: kafka-prefix } }
{{- end }}
{{- if .identity }}
- name: LORE_IDENTITY_SECRET
  valueFrom: { secretKeyRef: { name: {{ include "lore.secretName" $root }}, key: identity-secret } }
{{- end }}
{{- end }}

{{/*
One Deployment of the shared image (args: dict with root, component, values, args, env, ports, probePort,
serviceAccountName, withoutPlatformEnv, withoutRedis, withoutKafka, withoutIdentity, probePath: one path for every
probe instead of /livez and /readyz). Every component differs only in these.
*/}}
{{- define "lore.deployment" -}}
{{- $root := .root }}
{{- $v := .values }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "lore.componentName" (list $root .component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "lore.componentLabels" (list $root .component) | nindent 4 }}
spec:
  {{- if not (and $v.autoscaling $v.autoscaling.enabled) }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "lore.selectorLabels" (list $root .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "lore.selectorLabels" (list $root .component) | nindent 8 }}
        app.kubernetes.io/part-of: lore
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        {{- include "lore.checksums" $root | nindent 8 }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with .serviceAccountName }}
      serviceAccountName: {{ . }}
      automountServiceAccountToken: true
      {{- else }}
      automountServiceAccountToken: false
      {{- end }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ add $root.Values.shutdown.drainSeconds $root.Values.shutdown.graceSeconds }}
      containers:
        - name: {{ .component }}
          image: {{ include "lore.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          env:
            {{- include "lore.commonEnv" $root | nindent 12 }}
            {{- if not .withoutPlatformEnv }}
            {{- include "lore.platformEnv" (dict "root" $root "redis" (not .withoutRedis) "kafka" (not .withoutKafka) "identity" (not .withoutIdentity)) | nindent 12 }}
            {{- end }}
            - name: OTEL_SERVICE_NAME
              value: {{ .component }}
            {{- with .env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            {{- toYaml .ports | nindent 12 }}
          {{- if gt (int $root.Values.shutdown.drainSeconds) 0 }}
          lifecycle:
            preStop:
              sleep:
                seconds: {{ $root.Values.shutdown.drainSeconds }}
          {{- end }}
          # Liveness asks only whether the process is up; readiness whether its dependencies answer.
          livenessProbe:
            httpGet: { path: {{ .probePath | default "/livez" }}, port: {{ .probePort }} }
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 6
          readinessProbe:
            httpGet: { path: {{ .probePath | default "/readyz" }}, port: {{ .probePort }} }
            periodSeconds: 5
            timeoutSeconds: 3
            failureThreshold: 3
          startupProbe:
            httpGet: { path: {{ .probePath | default "/livez" }}, port: {{ .probePort }} }
            periodSeconds: 2
            failureThreshold: 60
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            - { name: tmp, mountPath: /tmp }
      volumes:
        - name: tmp
          emptyDir: { sizeLimit: 256Mi }
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{/* A PodDisruptionBudget for a component when enabled (args: root, component, values). */}}
{{- define "lore.pdb" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $v := index . 2 }}
{{- if and $v.enabled $v.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "lore.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "lore.componentLabels" (list $root $component) | nindent 4 }}
spec:
  minAvailable: {{ $v.pdb.minAvailable }}
  selector:
    matchLabels:
      {{- include "lore.selectorLabels" (list $root $component) | nindent 6 }}
{{- end }}
{{- end }}

{{/* A HorizontalPodAutoscaler on CPU for a component (args: root, component, values). */}}
{{- define "lore.hpa" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $v := index . 2 }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "lore.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "lore.componentLabels" (list $root $component) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "lore.componentName" (list $root $component) }}
  minReplicas: {{ $v.autoscaling.minReplicas }}
  maxReplicas: {{ $v.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $v.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}

{{/* A ClusterIP Service of a component (args: root, component, ports as list of dicts name/port). */}}
{{- define "lore.service" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "lore.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "lore.componentLabels" (list $root $component) | nindent 4 }}
    lore.dev/metrics: "true"
spec:
  type: ClusterIP
  selector:
    {{- include "lore.selectorLabels" (list $root $component) | nindent 4 }}
  ports:
    {{- range index . 2 }}
    - { name: {{ .name }}, port: {{ .port }}, targetPort: {{ .name }}, protocol: TCP }
    {{- end }}
{{- end }}
