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

{{/* The Secret holding the secrets (and the external services' URLs): the user's, or the one the chart creates. */}}
{{- define "lore.secretName" -}}
{{- default (include "lore.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/*
"true" when the values name any external service or an existing Secret: the auto modes then choose external for
all three services (the chart never mixes unless a mode says so).
*/}}
{{- define "lore.externalServicesGiven" -}}
{{- $v := .Values }}
{{- if or $v.externalDatabase.url $v.externalDatabase.ownerUrl $v.externalRedis.url $v.externalKafka.brokers $v.secrets.existingSecret }}true{{ end }}
{{- end }}

{{/* Where PostgreSQL comes from: external or cloudnativepg (postgresql.mode, auto resolved). */}}
{{- define "lore.postgresqlMode" -}}
{{- if ne .Values.postgresql.mode "auto" }}{{ .Values.postgresql.mode }}
{{- else if include "lore.externalServicesGiven" . }}external
{{- else }}cloudnativepg{{ end }}
{{- end }}

{{/* "true" when a running component reads Kafka (webhooks, graph, graph-worker, core-worker, agents-worker). */}}
{{- define "lore.kafkaReaders" -}}
{{- $v := .Values }}
{{- if or $v.webhooks.enabled $v.graph.enabled $v.graphWorker.enabled (and $v.core.enabled $v.core.worker.enabled) (and $v.agents.enabled $v.agents.worker.enabled) }}true{{ end }}
{{- end }}

{{/* Where Kafka comes from: external, strimzi, or none when no component reads it. */}}
{{- define "lore.kafkaMode" -}}
{{- if not (include "lore.kafkaReaders" .) }}none
{{- else if ne .Values.kafka.mode "auto" }}{{ .Values.kafka.mode }}
{{- else if include "lore.externalServicesGiven" . }}external
{{- else }}strimzi{{ end }}
{{- end }}

{{/* "true" when a running component reads Redis (the gateway, agents). */}}
{{- define "lore.redisReaders" -}}
{{- if or .Values.gateway.enabled .Values.agents.enabled }}true{{ end }}
{{- end }}

{{/* Where Redis comes from: external, inCluster, or none when no component reads it. */}}
{{- define "lore.redisMode" -}}
{{- if not (include "lore.redisReaders" .) }}none
{{- else if ne .Values.redis.mode "auto" }}{{ .Values.redis.mode }}
{{- else if include "lore.externalServicesGiven" . }}external
{{- else }}inCluster{{ end }}
{{- end }}

{{/* Names of the in-cluster dependencies' objects. */}}
{{- define "lore.postgresql.clusterName" -}}{{ include "lore.componentName" (list . "postgresql") }}{{- end }}
{{- define "lore.postgresql.appRoleSecret" -}}{{ include "lore.componentName" (list . "postgresql-lore-app") }}{{- end }}
{{- define "lore.kafka.clusterName" -}}{{ include "lore.componentName" (list . "kafka") }}{{- end }}
{{- define "lore.redis.name" -}}{{ include "lore.componentName" (list . "redis") }}{{- end }}

{{/* The Kafka bootstrap servers, comma-separated: the external brokers or the Strimzi cluster's bootstrap Service. */}}
{{- define "lore.kafkaBrokers" -}}
{{- if eq (include "lore.kafkaMode" .) "strimzi" }}
{{- printf "%s-kafka-bootstrap.%s.svc:9092" (include "lore.kafka.clusterName" .) .Release.Namespace }}
{{- else }}
{{- join "," .Values.externalKafka.brokers }}
{{- end }}
{{- end }}

{{/*
Where LORE_DATABASE_URL, LORE_DATABASE_OWNER_URL and LORE_REDIS_URL come from (arg: root): a secretKeyRef each,
as a dict with keys database, owner, redis. external: the chart's (or the existing) Secret. cloudnativepg: the
application role's Secret the chart makes (key uri) and CloudNativePG's generated <cluster>-app Secret of the
database owner (key uri). inCluster Redis: the Redis Secret the chart makes (key url).
*/}}
{{- define "lore.connectionRefs" -}}
{{- $secret := include "lore.secretName" . }}
{{- $refs := dict "database" (dict "name" $secret "key" "database-url") "owner" (dict "name" $secret "key" "database-owner-url") "redis" (dict "name" $secret "key" "redis-url") }}
{{- if eq (include "lore.postgresqlMode" .) "cloudnativepg" }}
{{- $_ := set $refs "database" (dict "name" (include "lore.postgresql.appRoleSecret" .) "key" "uri") }}
{{- $_ := set $refs "owner" (dict "name" (printf "%s-app" (include "lore.postgresql.clusterName" .)) "key" "uri") }}
{{- end }}
{{- if eq (include "lore.redisMode" .) "inCluster" }}
{{- $_ := set $refs "redis" (dict "name" (include "lore.redis.name" .) "key" "url") }}
{{- end }}
{{- toYaml $refs }}
{{- end }}

{{/*
The secrets of this release, generated once and kept (arg: root), as YAML: identity-secret, session-secret,
admin-token, encryption-keys, postgresql-app-password, redis-password. A value given in values.yaml wins; else the
value already in the cluster (helm's lookup, on upgrade and on a reinstall that finds a kept Secret); else a new
random one. Computed once per render and remembered, so every template that includes it sees the same values.
`helm template` and client-side dry runs cannot look up, so they show fresh values each time.
*/}}
{{- define "lore.generatedSecrets" -}}
{{- if not (hasKey .Values "__loreGeneratedSecrets") }}
{{- $ns := .Release.Namespace }}
{{- $mainData := dict }}
{{- if not .Values.secrets.existingSecret }}
{{- $main := lookup "v1" "Secret" $ns (include "lore.fullname" .) }}
{{- if $main }}{{ $mainData = $main.data | default dict }}{{ end }}
{{- end }}
{{- $old := dict }}
{{- range $k, $enc := $mainData }}{{ $_ := set $old $k (b64dec $enc) }}{{ end }}
{{- $role := lookup "v1" "Secret" $ns (include "lore.postgresql.appRoleSecret" .) }}
{{- if and $role $role.data (hasKey $role.data "password") }}{{ $_ := set $old "postgresql-app-password" (b64dec $role.data.password) }}{{ end }}
{{- $redis := lookup "v1" "Secret" $ns (include "lore.redis.name" .) }}
{{- if and $redis $redis.data (hasKey $redis.data "password") }}{{ $_ := set $old "redis-password" (b64dec $redis.data.password) }}{{ end }}
{{- $s := .Values.secrets }}
{{- $out := dict
  "identity-secret" (coalesce $s.identitySecret (get $old "identity-secret") (randAlphaNum 48))
  "session-secret" (coalesce $s.sessionSecret (get $old "session-secret") (randAlphaNum 48))
  "admin-token" (coalesce $s.adminToken (get $old "admin-token") (randAlphaNum 40))
  "encryption-keys" (coalesce $s.encryptionKeys (get $old "encryption-keys") (printf "k1:%s" (randBytes 32)))
  "postgresql-app-password" (coalesce (get $old "postgresql-app-password") (randAlphaNum 40))
  "redis-password" (coalesce (get $old "redis-password") (randAlphaNum 40))
}}
{{- $_ := set .Values "__loreGeneratedSecrets" $out }}
{{- end }}
{{- toYaml (get .Values "__loreGeneratedSecrets") }}
{{- end }}

{{/* helm.sh/resource-policy: keep when asked (arg: the boolean), as an annotations block's lines. */}}
{{- define "lore.keep" -}}
{{- if . }}helm.sh/resource-policy: keep{{ end }}
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
{{- if eq (include "lore.redisMode" .) "inCluster" }}
checksum/redis: {{ include (print .Template.BasePath "/redis.yaml") . | sha256sum }}
{{- end }}
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
{{- $refs := include "lore.connectionRefs" $root | fromYaml }}
- name: LORE_DATABASE_URL
  valueFrom: { secretKeyRef: {{ toJson $refs.database }} }
{{- if .redis }}
- name: LORE_REDIS_URL
  valueFrom: { secretKeyRef: {{ toJson $refs.redis }} }
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
