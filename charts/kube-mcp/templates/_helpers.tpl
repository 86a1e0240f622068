{{/* Full name of the release's objects: the release name, suffixed unless it holds the chart name. */}}
{{- define "kube-mcp.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods. */}}
{{- define "kube-mcp.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Labels of every object of the chart. */}}
{{- define "kube-mcp.labels" -}}
{{ include "kube-mcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kube-mcp
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kube-mcp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kube-mcp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator's image: by digest when one is set, else by tag. */}}
{{- define "kube-mcp.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The repository of the image MCPServer pods run when their spec names none. */}}
{{- define "kube-mcp.runtimeRepository" -}}
{{- default .Values.image.repository .Values.runtimeImage.repository -}}
{{- end -}}

{{/* The image MCPServer pods run when their spec names none. */}}
{{- define "kube-mcp.runtimeImage" -}}
{{- $repository := include "kube-mcp.runtimeRepository" . -}}
{{- if .Values.runtimeImage.digest -}}
{{- printf "%s@%s" $repository .Values.runtimeImage.digest -}}
{{- else if and .Values.image.digest (not .Values.runtimeImage.repository) (not .Values.runtimeImage.tag) -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) .Values.runtimeImage.tag -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Name of the leader-election Lease. */}}
{{- define "kube-mcp.leaseName" -}}
{{- printf "%s-leader" (include "kube-mcp.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The namespaces the operator is restricted to, comma-separated (empty: all namespaces):
operator.watchNamespaces plus operator.watchNamespace. */}}
{{- define "kube-mcp.watchNamespaces" -}}
{{- $watch := .Values.operator.watchNamespaces | default list -}}
{{- with .Values.operator.watchNamespace }}{{ $watch = append $watch . }}{{ end -}}
{{- $watch | compact | uniq | sortAlpha | join "," -}}
{{- end -}}
