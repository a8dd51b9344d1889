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

{{/* The controller image: repository:tag, the tag defaulting to the appVersion, then @digest when one is set
(the runtime pulls by the digest; the tag stays for people reading the pod). */}}
{{- define "karpenter.controller.image" -}}
{{- $img := .Values.controller.image }}
{{- $ref := printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- with $img.digest }}
{{- $ref = printf "%s@%s" $ref . }}
{{- end }}
{{- $ref }}
{{- end }}

{{/* "Name=bool,..." for a gate list ("Name:valueKey" strings, in order) and the values map holding them; a gate
whose value is null or missing is false. */}}
{{- define "karpenter.gateString" -}}
{{- $values := .values -}}
{{- $pairs := list -}}
{{- range .gates -}}
{{- $parts := splitList ":" . -}}
{{- $pairs = append $pairs (printf "%s=%t" (first $parts) (index $values (last $parts) | default false)) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end }}

{{/* FEATURE_GATES: the nine core gates, in upstream's order. */}}
{{- define "karpenter.featureGates" -}}
{{- include "karpenter.gateString" (dict "values" .Values.settings.featureGates "gates" (list "ReservedCapacity:reservedCapacity" "SpotToSpotConsolidation:spotToSpotConsolidation" "NodeRepair:nodeRepair" "NodeOverlay:nodeOverlay" "StaticCapacity:staticCapacity" "CapacityBuffer:capacityBuffer" "TerminateFirstDrift:terminateFirstDrift" "TerminateFirstRepair:terminateFirstRepair" "PodDeletionCostManagement:podDeletionCostManagement")) -}}
{{- end }}

{{/* AWS_FEATURE_GATES: the four AWS gates, in upstream's order, the DRA driver gates as resolved by karpenter.dra. */}}
{{- define "karpenter.awsFeatureGates" -}}
{{- $gates := merge (include "karpenter.dra" . | fromJson) (deepCopy .Values.settings.awsFeatureGates) -}}
{{- include "karpenter.gateString" (dict "values" $gates "gates" (list "NodeClassCEL:nodeClassCEL" "DRANVIDIAGPU:draNVIDIAGPU" "DRAEFA:draEFA" "RebootForRepair:rebootForRepair")) -}}
{{- end }}

{{/* The DRA settings as the controller receives them, a JSON object {draNVIDIAGPU, draEFA, ignoreDRARequests}:
settings.enableDRA turns both DRA driver gates on and IGNORE_DRA_REQUESTS off, and refuses to be combined with
any of the three values set explicitly (they are null by default); an enabled driver gate turns
IGNORE_DRA_REQUESTS off too (ignored requests would make the gate pointless); ignoreDRARequests is true when null. */}}
{{- define "karpenter.dra" -}}
{{- $s := .Values.settings -}}
{{- $aws := $s.awsFeatureGates | default dict -}}
{{- $explicit := list -}}
{{- range list "draNVIDIAGPU" "draEFA" -}}
{{- if not (kindIs "invalid" (index $aws .)) -}}
{{- $explicit = append $explicit (printf "settings.awsFeatureGates.%s" .) -}}
{{- end -}}
{{- end -}}
{{- if not (kindIs "invalid" $s.ignoreDRARequests) -}}
{{- $explicit = append $explicit "settings.ignoreDRARequests" -}}
{{- end -}}
{{- if and $s.enableDRA $explicit -}}
{{- fail (printf "settings.enableDRA can't be combined with %s: it sets them itself; unset one or the other" (join ", " $explicit)) -}}
{{- end -}}
{{- $gpu := or $s.enableDRA (index $aws "draNVIDIAGPU" | default false) -}}
{{- $efa := or $s.enableDRA (index $aws "draEFA" | default false) -}}
{{- $ignore := true -}}
{{- if not (kindIs "invalid" $s.ignoreDRARequests) -}}
{{- $ignore = $s.ignoreDRARequests -}}
{{- end -}}
{{- dict "draNVIDIAGPU" $gpu "draEFA" $efa "ignoreDRARequests" (and $ignore (not $gpu) (not $efa)) | toJson -}}
{{- end }}

{{/* Pod affinity terms with the chart's selector labels filled in where a term has no labelSelector. */}}
{{- define "karpenter.affinity" -}}
{{- $affinity := deepCopy .Values.affinity -}}
{{- $selector := dict "matchLabels" (include "karpenter.selectorLabels" . | fromYaml) -}}
{{- range $kind := list "podAffinity" "podAntiAffinity" -}}
{{- with index $affinity $kind -}}
{{- range .requiredDuringSchedulingIgnoredDuringExecution -}}
{{- if not (hasKey . "labelSelector") -}}
{{- $_ := set . "labelSelector" $selector -}}
{{- end -}}
{{- end -}}
{{- range .preferredDuringSchedulingIgnoredDuringExecution -}}
{{- if and .podAffinityTerm (not (hasKey .podAffinityTerm "labelSelector")) -}}
{{- $_ := set .podAffinityTerm "labelSelector" $selector -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $affinity -}}
{{- end }}

{{/* Annotations of every object. */}}
{{- define "karpenter.annotations" -}}
{{- with .Values.additionalAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}
