{{/*
The blob store's environment (uploads, project files, connector files, CSV imports), the same in graph,
graph-worker, core, core-worker, agents and agents-worker: PostgreSQL by default (runtime.blobs in the service's
database), or an S3-compatible bucket (docs/chart.md, "Blob store"). S3 credentials come only from a Secret
(keys access-key-id and secret-access-key); without one the pods use the cloud's workload identity (IRSA, ...).
*/}}
{{- define "lore.blobStoreEnv" -}}
{{- $b := .Values.blobStore }}
{{- $env := list (dict "name" "LORE_BLOB_STORE" "value" $b.type) }}
{{- if eq $b.type "s3" }}
{{- $s3 := $b.s3 }}
{{- if not $s3.bucket }}{{ fail "blobStore.s3.bucket is required with blobStore.type s3" }}{{ end }}
{{- $env = append $env (dict "name" "LORE_S3_BUCKET" "value" $s3.bucket) }}
{{- $env = append $env (dict "name" "LORE_S3_REGION" "value" $s3.region) }}
{{- $env = append $env (dict "name" "LORE_S3_FORCE_PATH_STYLE" "value" (toString $s3.forcePathStyle)) }}
{{- if $s3.endpoint }}
{{- $env = append $env (dict "name" "LORE_S3_ENDPOINT" "value" $s3.endpoint) }}
{{- end }}
{{- if $s3.prefix }}
{{- $env = append $env (dict "name" "LORE_S3_PREFIX" "value" $s3.prefix) }}
{{- end }}
{{- if $s3.existingSecret }}
{{- $env = append $env (dict "name" "LORE_S3_ACCESS_KEY_ID" "valueFrom" (dict "secretKeyRef" (dict "name" $s3.existingSecret "key" "access-key-id"))) }}
{{- $env = append $env (dict "name" "LORE_S3_SECRET_ACCESS_KEY" "valueFrom" (dict "secretKeyRef" (dict "name" $s3.existingSecret "key" "secret-access-key"))) }}
{{- end }}
{{- end }}
{{- toYaml $env }}
{{- end }}
