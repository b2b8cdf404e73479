package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/regghost/regghost/pkg/catalog"
)

// What every cluster of this suite holds beside a test's own objects: the
// objects a kubeadm control plane writes (on top of those kube-apiserver
// writes itself with RBAC on: its bootstrap policy, priority classes, flow
// schemas, APIServices) and what workloads add that is big. A healthy such
// cluster must read as healthy to every read command, and its big objects
// must survive every write.

// The big objects every cluster holds, at the sizes real clusters hold them.
const (
	// helmRelease is a Helm 3 release with two revisions kept; each
	// revision's Secret carries about 1 MiB (the Secret limit).
	helmRelease   = "monitoring"
	helmNamespace = "monitoring"
	// dashboardsConfigMap is a ConfigMap near the 1 MiB limit.
	dashboardsConfigMap = "grafana-dashboards"
	// promGroup is the group of the CRD set the size of kube-prometheus'.
	promGroup = "monitoring.coreos.com"
)

// promCRDs are kube-prometheus' CRDs with the size of each one's schema in
// KB (the real ones hold hundreds of KB of OpenAPI for the biggest).
var promCRDs = []struct {
	plural, kind string
	kb           int
}{
	{"prometheuses", "Prometheus", 420},
	{"alertmanagers", "Alertmanager", 300},
	{"prometheusagents", "PrometheusAgent", 260},
	{"thanosrulers", "ThanosRuler", 240},
	{"scrapeconfigs", "ScrapeConfig", 120},
	{"alertmanagerconfigs", "AlertmanagerConfig", 100},
	{"podmonitors", "PodMonitor", 40},
	{"servicemonitors", "ServiceMonitor", 40},
	{"probes", "Probe", 40},
	{"prometheusrules", "PrometheusRule", 10},
}

// builtinOnly leaves out of rs the custom resources every cluster serves
// (kube-prometheus' CRD set): what a built-in catalog is compared with.
func builtinOnly(rs []catalog.Resource) []catalog.Resource {
	var out []catalog.Resource
	for _, r := range rs {
		if r.Group != promGroup {
			out = append(out, r)
		}
	}
	return out
}

// seedProductionShape writes what a kubeadm cluster and its workloads hold
// through the API server, as kubeadm init, the addons and Helm write it.
func (c *cluster) seedProductionShape(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	create := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("production shape: create %s: %v", what, err)
		}
	}
	ca, err := os.ReadFile(c.pki.CA)
	mustNoErr(t, "read CA", err)
	sys := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "kube-system"} }
	core, rbac, apps := c.kube.CoreV1(), c.kube.RbacV1(), c.kube.AppsV1()

	// kubeadm's ConfigMaps in kube-system and kube-public.
	for name, data := range map[string]map[string]string{
		"kubeadm-config": {"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nclusterName: kubernetes\ncontrolPlaneEndpoint: 127.0.0.1:6443\nnetworking:\n  dnsDomain: cluster.local\n  serviceSubnet: 10.0.0.0/24\n  podSubnet: 10.244.0.0/16\netcd:\n  local:\n    dataDir: /var/lib/etcd\n"},
		"kubelet-config": {"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nclusterDNS: [10.0.0.10]\nclusterDomain: cluster.local\nrotateCertificates: true\nstaticPodPath: /etc/kubernetes/manifests\n"},
		"kube-proxy":     {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: iptables\n", "kubeconfig.conf": "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n    server: https://127.0.0.1:6443\n  name: default\n"},
		"coredns":        {"Corefile": ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n"},
	} {
		_, err := core.ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: sys(name), Data: data}, metav1.CreateOptions{})
		create("ConfigMap kube-system/"+name, err)
	}
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: https://127.0.0.1:6443\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nusers: null\n", base64.StdEncoding.EncodeToString(ca))
	_, err = core.ConfigMaps("kube-public").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"}, Data: map[string]string{"kubeconfig": kubeconfig}}, metav1.CreateOptions{})
	create("ConfigMap kube-public/cluster-info", err)
	// kube-controller-manager's root-ca-cert-publisher writes this into
	// every namespace; here for the namespaces kubeadm's objects live in.
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		_, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns,
			Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
		create("ConfigMap "+ns+"/kube-root-ca.crt", err)
	}

	// The bootstrap token kubeadm init prints (24 hours, as its default).
	_, err = core.Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: sys("bootstrap-token-abcdef"), Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
			"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token", "expiration": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339),
			"description": "The default bootstrap token generated by 'kubeadm init'."}}, metav1.CreateOptions{})
	create("bootstrap token", err)

	// kubeadm's RBAC.
	sa := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	clusterRole := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	for _, r := range []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}}}},
	} {
		_, err := rbac.ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
		create("ClusterRole "+r.Name, err)
	}
	for _, b := range []rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"}, RoleRef: clusterRole("kubeadm:get-nodes"), Subjects: []rbacv1.Subject{group("system:bootstrappers:kubeadm:default-node-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:kubelet-bootstrap"}, RoleRef: clusterRole("system:node-bootstrapper"), Subjects: []rbacv1.Subject{group("system:bootstrappers:kubeadm:default-node-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:node-autoapprove-bootstrap"}, RoleRef: clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient"), Subjects: []rbacv1.Subject{group("system:bootstrappers:kubeadm:default-node-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:node-autoapprove-certificate-rotation"}, RoleRef: clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"), Subjects: []rbacv1.Subject{group("system:nodes")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:node-proxier"}, RoleRef: clusterRole("system:node-proxier"), Subjects: []rbacv1.Subject{sa("kube-system", "kube-proxy")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"}, RoleRef: clusterRole("cluster-admin"), Subjects: []rbacv1.Subject{group("kubeadm:cluster-admins")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"}, RoleRef: clusterRole("system:coredns"), Subjects: []rbacv1.Subject{sa("kube-system", "coredns")}},
	} {
		_, err := rbac.ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
		create("ClusterRoleBinding "+b.Name, err)
	}
	_, err = rbac.Roles("kube-public").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:bootstrap-signer-clusterinfo", Namespace: "kube-public"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	create("Role kube-public/kubeadm:bootstrap-signer-clusterinfo", err)
	_, err = rbac.RoleBindings("kube-public").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:bootstrap-signer-clusterinfo", Namespace: "kube-public"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kubeadm:bootstrap-signer-clusterinfo"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"}}}, metav1.CreateOptions{})
	create("RoleBinding kube-public/kubeadm:bootstrap-signer-clusterinfo", err)
	for _, name := range []string{"kube-proxy", "coredns"} {
		_, err := core.ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: sys(name)}, metav1.CreateOptions{})
		create("ServiceAccount kube-system/"+name, err)
	}
	_, err = rbac.Roles("kube-system").Create(ctx, &rbacv1.Role{ObjectMeta: sys("kube-proxy"),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"kube-proxy"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	create("Role kube-system/kube-proxy", err)
	_, err = rbac.RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: sys("kube-proxy"),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kube-proxy"}, Subjects: []rbacv1.Subject{group("system:bootstrappers:kubeadm:default-node-token")}}, metav1.CreateOptions{})
	create("RoleBinding kube-system/kube-proxy", err)

	// The addons: kube-proxy's DaemonSet and CoreDNS's Deployment and Service.
	labels := func(k, v string) map[string]string { return map[string]string{k: v} }
	critical := "system-node-critical"
	_, err = apps.DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: labels("k8s-app", "kube-proxy")},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels("k8s-app", "kube-proxy")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("k8s-app", "kube-proxy")}, Spec: corev1.PodSpec{
				ServiceAccountName: "kube-proxy", HostNetwork: true, PriorityClassName: critical, NodeSelector: labels("kubernetes.io/os", "linux"),
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.37.2", Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"}}}}}}}, metav1.CreateOptions{})
	create("DaemonSet kube-system/kube-proxy", err)
	replicas := int32(2)
	_, err = apps.Deployments("kube-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system", Labels: labels("k8s-app", "kube-dns")},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels("k8s-app", "kube-dns")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("k8s-app", "kube-dns")}, Spec: corev1.PodSpec{
				ServiceAccountName: "coredns", PriorityClassName: "system-cluster-critical", NodeSelector: labels("kubernetes.io/os", "linux"),
				Tolerations: []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}, {Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
				Containers:  []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.1", Args: []string{"-conf", "/etc/coredns/Corefile"}}}}}}}, metav1.CreateOptions{})
	create("Deployment kube-system/coredns", err)
	_, err = core.Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.10", Selector: labels("k8s-app", "kube-dns"), Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)}}}}, metav1.CreateOptions{})
	create("Service kube-system/kube-dns", err)

	// One control-plane node as the kubelet registers it, its Lease, and
	// its kubelet's client and serving CSRs.
	const node = "control-plane-1"
	_, err = core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Labels:      map[string]string{"kubernetes.io/hostname": node, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/control-plane": "", "node.kubernetes.io/exclude-from-external-load-balancers": ""},
		Annotations: map[string]string{"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock", "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}, Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}}}, metav1.CreateOptions{})
	create("Node "+node, err)
	holder, dur, now := node, int32(40), metav1.NewMicroTime(time.Now())
	_, err = c.kube.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now}}, metav1.CreateOptions{})
	create("Lease kube-node-lease/"+node, err)
	for _, csr := range []struct {
		name, signer string
		usages       []certificatesv1.KeyUsage
	}{
		{"csr-kubelet-client", certificatesv1.KubeAPIServerClientKubeletSignerName, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
		{"csr-kubelet-serving", certificatesv1.KubeletServingSignerName, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}},
	} {
		_, err := c.kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: csr.name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: nodeCSR(t, node, csr.signer == certificatesv1.KubeletServingSignerName), SignerName: csr.signer, Usages: csr.usages}}, metav1.CreateOptions{})
		create("CSR "+csr.name, err)
	}

	c.seedWorkloads(t)
}

// nodeCSR is a PEM certificate request of node's kubelet: its client
// identity, or its serving certificate.
func nodeCSR(t *testing.T, node string, serving bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mustNoErr(t, "CSR key", err)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}
	if serving {
		tmpl.DNSNames = []string{node}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	mustNoErr(t, "CSR", err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// seedWorkloads adds what workloads bring that is big: a Helm release of
// two revisions of ~1 MiB each, stored as Helm stores them; a ConfigMap
// near the 1 MiB limit; kube-prometheus' CRD set with schemas as big as
// its own, served.
func (c *cluster) seedWorkloads(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, helmNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		c.createNamespace(t, helmNamespace)
	}
	for rev := 1; rev <= 2; rev++ {
		status := "superseded"
		if rev == 2 {
			status = "deployed"
		}
		_, err := c.kube.CoreV1().Secrets(helmNamespace).Create(ctx, helmReleaseSecret(t, helmNamespace, helmRelease, rev, status, 1000<<10), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("production shape: create the Helm release: %v", err)
		}
	}
	_, err := c.kube.CoreV1().ConfigMaps(helmNamespace).Create(ctx, bigConfigMap(helmNamespace, dashboardsConfigMap, 1000<<10), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("production shape: create %s: %v", dashboardsConfigMap, err)
	}
	for _, crd := range promCRDs {
		_, err := c.dyn.Resource(crdGVR).Create(ctx, bigCRD(promGroup, crd.plural, crd.kind, crd.kb<<10), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("production shape: create CRD %s.%s: %v", crd.plural, promGroup, err)
		}
	}
	waitFor(t, 90*time.Second, "kube-prometheus' CRDs served", func() error {
		res, err := c.kube.Discovery().ServerResourcesForGroupVersion(promGroup + "/v1")
		if err != nil {
			return err
		}
		if len(res.APIResources) < len(promCRDs) {
			return fmt.Errorf("%d of %d served", len(res.APIResources), len(promCRDs))
		}
		return nil
	})
}

// filler is n bytes of text that compresses as little as real chart
// templates and dashboards that were already compressed would: seeded
// random letters, the same for the same seed.
func filler(seed uint64, n int) string {
	r := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 {}:-"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// helmReleaseSecret is revision rev of a Helm 3 release as Helm's Secret
// driver stores it: type helm.sh/release.v1, name
// sh.helm.release.v1.<release>.v<rev>, labels owner, name, status and
// version, and data.release the base64 of the gzip of the release's JSON
// (its chart's templates included), about size bytes.
func helmReleaseSecret(t *testing.T, ns, release string, rev int, status string, size int) *corev1.Secret {
	t.Helper()
	// base64 grows by 4/3 and the filler hardly compresses.
	templates := filler(uint64(rev), size*3/4-4096)
	rel := map[string]any{
		"name": release, "namespace": ns, "version": rev,
		"info": map[string]any{"first_deployed": "2026-11-02T10:00:00Z", "last_deployed": "2026-11-03T10:00:00Z", "status": status, "description": "Upgrade complete"},
		"chart": map[string]any{
			"metadata":  map[string]any{"name": "kube-prometheus-stack", "version": "79.1.0", "appVersion": "v0.87.0", "apiVersion": "v2", "type": "application"},
			"templates": []any{map[string]any{"name": "templates/prometheus/prometheus.yaml", "data": base64.StdEncoding.EncodeToString([]byte(templates))}},
			"values":    map[string]any{"grafana": map[string]any{"enabled": true}},
		},
		"config":   map[string]any{"prometheus": map[string]any{"retention": "15d"}},
		"manifest": "---\n# Source: kube-prometheus-stack/templates/prometheus/prometheus.yaml\n",
	}
	raw, err := json.Marshal(rel)
	mustNoErr(t, "encode release", err)
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = w.Write(raw)
	mustNoErr(t, "gzip release", w.Close())
	encoded := base64.StdEncoding.EncodeToString(gz.Bytes())
	if len(encoded) > 1<<20-1024 {
		t.Fatalf("Helm release %s v%d: %d bytes, more than a Secret holds", release, rev, len(encoded))
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, rev), Namespace: ns,
		Labels: map[string]string{"owner": "helm", "name": release, "status": status, "version": fmt.Sprint(rev)}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte(encoded)}}
}

// bigConfigMap is a ConfigMap of about size bytes of dashboards.
func bigConfigMap(ns, name string, size int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"grafana_dashboard": "1"}},
		Data: map[string]string{name + ".json": `{"title":"` + name + `","panels":"` + filler(uint64(len(name))+uint64(size), size-256) + `"}`}}
}

// bigCRD is a namespaced CRD <plural>.<group> whose OpenAPI schema takes
// about size bytes: properties with descriptions as operators' generated
// CRDs carry them.
func bigCRD(group, plural, kind string, size int) *unstructured.Unstructured {
	props := map[string]any{}
	n := int(math.Max(1, float64(size)/600))
	for i := 0; i < n; i++ {
		props[fmt.Sprintf("field%04d", i)] = map[string]any{"type": "string",
			"description": "Field " + fmt.Sprint(i) + " of " + kind + ": " + strings.Repeat("configures the behaviour the operator applies to the managed workload. ", 7)}
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"spec":   map[string]any{"type": "object", "properties": props, "x-kubernetes-preserve-unknown-fields": true},
		"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
	}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group, "annotations": map[string]any{"controller-gen.kubebuilder.io/version": "v0.18.0", "operator.prometheus.io/version": "0.87.0"}},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List", "categories": []any{"prometheus-operator"}},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": schema}, "subresources": map[string]any{"status": map[string]any{}}}},
		},
	}}
}

// kubeadmControllerManager runs kube-controller-manager as kubeadm's
// static pod does: every controller with bootstrapsigner and tokencleaner,
// the cluster signing key, the root CA, and, when saCredentials, each
// controller under its own ServiceAccount (--use-service-account-credentials,
// kubeadm's default; without it the controllers' accounts that kube-apiserver's
// bootstrap policy binds never exist).
func (c *cluster) kubeadmControllerManager(t *testing.T, saCredentials bool) {
	t.Helper()
	startProcess(t, "kube-controller-manager", filepath.Join(c.dir, "kcm.log"), binsFor(t).kubeControllerManager,
		"--kubeconfig", c.kubeconfig, "--authentication-kubeconfig", c.kubeconfig, "--authorization-kubeconfig", c.kubeconfig,
		"--leader-elect=false", "--secure-port=0", "--controllers", "*,bootstrapsigner,tokencleaner",
		fmt.Sprintf("--use-service-account-credentials=%v", saCredentials),
		"--cluster-signing-cert-file", c.pki.CA, "--cluster-signing-key-file", c.pki.CAKey, "--root-ca-file", c.pki.CA,
		"--service-account-private-key-file", filepath.Join(c.dir, "sa.key"), "--allocate-node-cidrs=false", "--v", "1")
	// kube-root-ca.crt in the Helm namespace and the controllers' accounts
	// show that the controllers run.
	waitFor(t, 90*time.Second, "kube-controller-manager's controllers at work", func() error {
		if _, err := c.kube.CoreV1().ConfigMaps(helmNamespace).Get(context.Background(), "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return err
		}
		if saCredentials {
			_, err := c.kube.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), "namespace-controller", metav1.GetOptions{})
			return err
		}
		return nil
	})
}

// controllersSettled waits until kube-controller-manager has acted on the
// seed and on namespace ns: CoreDNS's Deployment observed, with its pods
// made, and ns's default ServiceAccount and kube-root-ca.crt made.
func (c *cluster) controllersSettled(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 90*time.Second, "the controllers settled", func() error {
		d, err := c.kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil {
			return fmt.Errorf("coredns: no replicas in its spec")
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.Replicas != *d.Spec.Replicas {
			return fmt.Errorf("coredns: generation %d observed %d, %d of %d pods", d.Generation, d.Status.ObservedGeneration, d.Status.Replicas, *d.Spec.Replicas)
		}
		if _, err := c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err = c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
}

// TestProductionShapedClusterIsHealthy runs every read command on the
// cluster every test starts from, kubeadm-shaped with RBAC on and a real
// kube-controller-manager as kubeadm runs it, with and without
// --use-service-account-credentials (without it the ServiceAccounts
// kube-apiserver's bootstrap policy binds never exist): nothing to act on,
// exit 0 from scan (online, --no-api, --db), dangling, space and versions,
// and serve's first cycle counts no ghost and no dangling reference. Then a
// user's RoleBinding whose ServiceAccount is deleted is found, alone.
func TestProductionShapedClusterIsHealthy(t *testing.T) {
	for _, saCredentials := range []bool{true, false} {
		t.Run(fmt.Sprintf("use-service-account-credentials=%v", saCredentials), func(t *testing.T) {
			c := startCluster(t, clusterOptions{})
			c.kubeadmControllerManager(t, saCredentials)
			ctx := context.Background()
			c.createNamespace(t, "app")
			c.createPod(t, "app", "web")
			c.createConfigMap(t, "app", "cfg")
			c.createSecret(t, "app", "creds")
			// Let the controllers settle: CoreDNS's Deployment observed
			// and its pods made (ReplicaSets, pods, status), app's
			// default ServiceAccount and root CA made.
			c.controllersSettled(t, "app")

			db := filepath.Join(t.TempDir(), "snapshot.db")
			rc, err := c.etcd.Snapshot(ctx)
			mustNoErr(t, "snapshot", err)
			f, err := os.Create(db)
			mustNoErr(t, "create snapshot file", err)
			_, err = f.ReadFrom(rc)
			mustNoErr(t, "write snapshot", err)
			mustNoErr(t, "close snapshot", f.Close())
			rc.Close()

			byDesign := 0
			for _, args := range [][]string{
				{"scan", "-o", "json"},
				{"scan", "-o", "json", "--no-api"},
			} {
				out, errOut, code := c.regghost(t, "", args...)
				if code != 0 {
					t.Errorf("%v: exit %d, want 0: %s\n%s", args, code, errOut, out)
					continue
				}
				rep := decodeReport(t, out)
				assertFindings(t, rep, nil)
				if rep.ScannedKeys < 200 || rep.InternalKeys == 0 {
					t.Errorf("%v: scanned %d keys (%d internal): the cluster's objects were not all read", args, rep.ScannedKeys, rep.InternalKeys)
				}
				if len(rep.Dangling) > 0 {
					t.Errorf("%v: dangling references on a healthy cluster:\n%s", args, describeRefs(rep.Dangling))
				}
				if len(rep.DanglingByDesign) > byDesign {
					byDesign = len(rep.DanglingByDesign)
				}
			}
			if !saCredentials && byDesign < 40 {
				t.Errorf("without --use-service-account-credentials, %d references of the bootstrap policy shown as by design, want every system:controller:* binding", byDesign)
			}
			out, errOut, code := runBinary(t, "", "scan", "-o", "json", "--db", db)
			if code != 0 {
				t.Errorf("scan --db: exit %d, want 0: %s\n%s", code, errOut, out)
			} else if rep := decodeReport(t, out); rep.Len() > 0 || len(rep.Dangling) > 0 {
				assertFindings(t, rep, nil)
				t.Errorf("scan --db: dangling %s", describeRefs(rep.Dangling))
			}
			wide, _, code := c.regghost(t, "", "scan", "-o", "wide")
			if code != 0 || (!saCredentials && !strings.Contains(strings.Join(strings.Fields(wide), " "), "BY DESIGN ClusterRoleBinding system:controller:attachdetach-controller: subjects[0] -> serviceaccount kube-system/attachdetach-controller")) {
				t.Errorf("scan -o wide: exit %d, the bootstrap policy's references not shown as by design:\n%s", code, wide)
			}
			for _, args := range [][]string{
				{"dangling", "-o", "json"},
				{"space", "-o", "json"},
				{"stored-versions"},
			} {
				out, errOut, code := c.regghost(t, "", args...)
				if code != 0 {
					t.Errorf("%v: exit %d, want 0: %s\n%s", args, code, errOut, out)
				}
				if args[0] == "dangling" && strings.Contains(out, `"fix"`) {
					t.Errorf("dangling plans a fix on a healthy cluster:\n%s", out)
				}
			}
			out, errOut, code = runBinary(t, "", "space", "--db", db, "-o", "json")
			if code != 0 || !strings.Contains(out, `"ghosts": {`) {
				t.Errorf("space --db: exit %d: %s\n%s", code, errOut, out)
			}
			s := c.startServe(t, t.TempDir(), "--interval", "1s")
			s.waitCycles(t, 1)
			_, body, err := s.get("/metrics", true)
			mustNoErr(t, "metrics", err)
			for _, l := range strings.Split(body, "\n") {
				for _, m := range []string{"regghost_ghosts", "regghost_objects{", "regghost_dangling_references", "regghost_single_witness_ghosts"} {
					if strings.HasPrefix(l, m) && !strings.HasSuffix(l, " 0") {
						t.Errorf("serve on a healthy cluster: %s", l)
					}
				}
			}

			// A user's own binding to an account deleted later is found.
			_, err = c.kube.CoreV1().ServiceAccounts("app").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: "app"}}, metav1.CreateOptions{})
			mustNoErr(t, "create ServiceAccount", err)
			_, err = c.kube.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer-reads-config", Namespace: "kube-system"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kube-proxy"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "app", Name: "deployer"}}}, metav1.CreateOptions{})
			mustNoErr(t, "create RoleBinding", err)
			mustNoErr(t, "delete ServiceAccount", c.kube.CoreV1().ServiceAccounts("app").Delete(ctx, "deployer", metav1.DeleteOptions{}))
			rep, code := c.scanJSON(t)
			if code != 3 || len(rep.Dangling) != 1 || rep.Dangling[0].Key != "/registry/rolebindings/kube-system/deployer-reads-config" || rep.Dangling[0].State != "gone" {
				t.Errorf("a user's RoleBinding to a deleted ServiceAccount: exit %d, dangling:\n%s", code, describeRefs(rep.Dangling))
			}

			// A binding dressed as the bootstrap policy (its label, autoupdate,
			// a system:controller: name) granting cluster-admin to an account
			// nobody has: whoever creates kube-system/backdoor is
			// cluster-admin. The release never wrote it: a finding, never
			// by design, with or without the API server's version.
			_, err = c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:controller:backdoor",
				Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}, Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "backdoor"}}}, metav1.CreateOptions{})
			mustNoErr(t, "create ClusterRoleBinding", err)
			for _, args := range [][]string{{"scan", "-o", "json"}, {"scan", "-o", "json", "--no-api"}} {
				out, errOut, code := c.regghost(t, "", args...)
				rep := decodeReport(t, out)
				var found bool
				for _, r := range rep.Dangling {
					found = found || (r.Key == "/registry/clusterrolebindings/system:controller:backdoor" && strings.Contains(r.Consequence, "grants ClusterRole cluster-admin, not the role of its name"))
				}
				for _, r := range rep.DanglingByDesign {
					if strings.Contains(r.Key, "backdoor") {
						t.Errorf("%v: the backdoor binding classed by design", args)
					}
				}
				if code != 3 || !found || len(rep.Dangling) != 2 {
					t.Errorf("%v: a cluster-admin binding dressed as bootstrap policy: exit %d, want 3 and it found: %s\n%s", args, code, errOut, describeRefs(rep.Dangling))
				}
			}
		})
	}
}
