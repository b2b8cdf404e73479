#!/bin/sh
# Grants the static pod's user "regghost" get on the custom resources of
# every CRD the cluster serves now (Established), each by name, never "*"
# (RBAC matches a wildcard against subresources too). Run it with admin
# rights after applying rbac.yaml, and again when CRDs are added: it
# replaces the ClusterRole regghost-custom-resources with the CRDs of the
# day. With no CRD the role holds no rule. Arguments go to every kubectl
# call (e.g. --kubeconfig FILE); KUBECTL names another kubectl.
#
#   sh deploy/static-pod/grant-custom-resources.sh [--kubeconfig FILE]
set -eu
KUBECTL=${KUBECTL:-kubectl}
rules=$("$KUBECTL" "$@" get customresourcedefinitions.apiextensions.k8s.io -o go-template='{{range $crd := .items}}{{range $crd.status.conditions}}{{if and (eq .type "Established") (eq .status "True")}}  - apiGroups: ["{{$crd.spec.group}}"]
    resources: ["{{$crd.spec.names.plural}}"]
    verbs: ["get"]
{{end}}{{end}}{{end}}')
[ -n "$rules" ] || rules="  []"
"$KUBECTL" "$@" apply -f - <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: regghost-custom-resources
  labels:
    app.kubernetes.io/name: regghost
rules:
$rules
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: regghost-custom-resources
  labels:
    app.kubernetes.io/name: regghost
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: regghost-custom-resources
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: regghost
YAML
