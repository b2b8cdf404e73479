{{- define "regghost.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "regghost.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "regghost.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /*
The reads of serve's witness (deploy/static-pod/rbac.yaml holds the same):
discovery; the list of CustomResourceDefinitions; a GET of each object a
scan asks about: a suspected ghost (of any resource, Secrets too: a
force-deleted namespace leaves them), its namespace or CRD, kube-system (is
this the API server of this etcd?), an object a dangling reference starts
from (APIServices, webhook configurations, CRDs, RBAC bindings,
PersistentVolumes) when it is encrypted, and what it points at. The etcd
client certificate serve holds reads all of this and more.
*/ -}}
{{- define "regghost.witnessRules" -}}
- nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/version"]
  verbs: [get]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [list]
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get]
{{- end -}}

{{- define "regghost.apiserverRules" -}}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list]
{{- end -}}
