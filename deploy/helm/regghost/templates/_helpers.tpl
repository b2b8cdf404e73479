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
scan asks about: a suspected ghost (of any built-in resource, Secrets too: a
force-deleted namespace leaves them; of the custom resources in
witness.customResources), its namespace or CRD, kube-system (is
this the API server of this etcd?), an object a dangling reference starts
from (APIServices, webhook configurations, CRDs, RBAC bindings,
PersistentVolumes) when it is encrypted, and what it points at. The etcd
client certificate serve holds reads all of this and more. Every resource is
named (files/witness-rules.yaml, generated): "*" would match subresources too,
and GET on nodes/proxy or pods/exec reaches a kubelet or a container.
*/ -}}
{{- define "regghost.witnessRules" -}}
{{- $builtin := .Files.Get "files/witness-rules.yaml" | fromYamlArray }}
{{- if not $builtin }}
{{- fail "files/witness-rules.yaml is missing or empty: the chart is incomplete" }}
{{- end }}
{{- $builtin | toYaml }}
{{- $groups := dict }}
{{- if not (kindIs "slice" .Values.witness.customResources) }}
{{- fail "witness.customResources must be a list of <plural>.<group> names" }}
{{- end }}
{{- range .Values.witness.customResources }}
{{- if or (not (kindIs "string" .)) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$" (toString .))) }}
{{- fail (printf "witness.customResources: %v is not <plural>.<group> (a CRD's name; no wildcard, no subresource)" (toJson .)) }}
{{- end }}
{{- $parts := splitn "." 2 . }}
{{- $_ := set $groups $parts._1 (append (get $groups $parts._1 | default list) $parts._0) }}
{{- end }}
{{- range $group := keys $groups | sortAlpha }}
- apiGroups: [{{ $group | quote }}]
  resources: {{ get $groups $group | uniq | sortAlpha | toJson }}
  verbs: ["get"]
{{- end }}
{{- end -}}

{{- define "regghost.apiserverRules" -}}
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list]
{{- end -}}

{{- /*
regghost.tls says where serve's serving certificate comes from: "webConfig"
(its tls_server_config), "secret" (tls.secretName, mounted), "selfSigned"
(a CA and a certificate the chart makes, kept in the Secret
<fullname>-serving and mounted: the ServiceMonitor checks the certificate
against that CA, so Prometheus's credentials go to regghost only), or ""
for plain HTTP.
Under metricsAuth: delegated, or with webConfig's basic_auth_users, it is
never "": no bearer token or password crosses the network in clear (serve
refuses it).
*/ -}}
{{- define "regghost.tls" -}}
{{- $web := fromYaml (.Values.webConfig | default "{}") -}}
{{- if and $web.tls_server_config .Values.tls.secretName -}}
{{- fail "webConfig's tls_server_config and tls.secretName both give a certificate: set one" -}}
{{- else if $web.tls_server_config -}}
webConfig
{{- else if .Values.tls.secretName -}}
secret
{{- else if or (eq .Values.metricsAuth "delegated") .Values.tls.selfSigned $web.basic_auth_users -}}
selfSigned
{{- end -}}
{{- end -}}

{{- /* regghost.portName names the metrics port after its scheme. */ -}}
{{- define "regghost.portName" -}}
{{- if include "regghost.tls" . -}}https-metrics{{- else -}}http-metrics{{- end -}}
{{- end -}}

{{- /*
regghost.webConfig is the web configuration serve reads from the chart's
Secret: webConfig as given, with a tls_server_config naming the mounted
serving Secret's files (tls.secretName's, or the chart's own); "" when
there is none.
*/ -}}
{{- define "regghost.webConfig" -}}
{{- if include "regghost.servingSecret" . -}}
{{- $web := fromYaml (.Values.webConfig | default "{}") -}}
{{- $_ := set $web "tls_server_config" (dict "cert_file" "/etc/regghost-tls/tls.crt" "key_file" "/etc/regghost-tls/tls.key") -}}
{{- toYaml $web -}}
{{- else -}}
{{- .Values.webConfig -}}
{{- end -}}
{{- end -}}


{{- /*
regghost.servingSecret is the kubernetes.io/tls Secret serve's certificate
is mounted from: tls.secretName, the chart's own <fullname>-serving when
it makes one (selfSigned), else "".
*/ -}}
{{- define "regghost.servingSecret" -}}
{{- $tls := include "regghost.tls" . -}}
{{- if eq $tls "secret" -}}
{{ .Values.tls.secretName }}
{{- else if eq $tls "selfSigned" -}}
{{ include "regghost.fullname" . }}-serving
{{- end -}}
{{- end -}}
