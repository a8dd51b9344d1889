{{/* Name of the chart, or nameOverride. */}}
{{- define "karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified name: the release name when it already contains the chart's name. */}}
{{- define "karpenter.fullname" -}}
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

{{- define "karpenter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "karpenter.labels" -}}
helm.sh/chart: {{ include "karpenter.chart" . }}
{{ include "karpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels: the Deployment's, the PDB's, the Service's and the spread constraints'. */}}
{{- define "karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller image: digest over tag, tag defaulting to the appVersion. */}}
{{- define "karpenter.controller.image" -}}
{{- $img := .Values.controller.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/* FEATURE_GATES in the controller's Gate=bool form. */}}
{{- define "karpenter.featureGates" -}}
{{- $fg := .Values.settings.featureGates -}}
ReservedCapacity={{ $fg.reservedCapacity }},SpotToSpotConsolidation={{ $fg.spotToSpotConsolidation }},NodeRepair={{ $fg.nodeRepair }},NodeOverlay={{ $fg.nodeOverlay }},StaticCapacity={{ $fg.staticCapacity }}
{{- end }}

{{/* Annotations of every object. */}}
{{- define "karpenter.annotations" -}}
{{- with .Values.additionalAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}
