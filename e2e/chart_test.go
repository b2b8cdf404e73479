package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// helmBin is the Helm CLI, built from the module proxy into the Go build
// cache the first time a test asks for it.
var helmBin = sync.OnceValues(func() (string, error) {
	out, err := goCmd("tools/helm", "tool", "-n", "helm")
	return strings.TrimSpace(out), err
})

func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := helmBin()
	if err != nil {
		t.Fatalf("build helm: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// renderedObject is one document of helm template's output.
type renderedObject struct {
	Kind     string         `json:"kind"`
	Metadata map[string]any `json:"metadata"`
	Spec     map[string]any `json:"spec"`
	Data     map[string]any `json:"data"`
	// StringData holds a Secret's stringData.
	StringData map[string]any      `json:"stringData"`
	Type       string              `json:"type"`
	Rules      []rbacv1.PolicyRule `json:"rules"`
	RoleRef    rbacv1.RoleRef      `json:"roleRef"`
	Subjects   []rbacv1.Subject    `json:"subjects"`
}

// renderChart runs helm template and returns its objects by "Kind/name",
// and the Deployment's document.
func renderChart(t *testing.T, args ...string) (map[string]renderedObject, string) {
	t.Helper()
	out := helm(t, append([]string{"template", "ghosts", chartDir, "--namespace", "monitoring"}, args...)...)
	objs := map[string]renderedObject{}
	var deployment string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o renderedObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue
		}
		objs[o.Kind+"/"+fmt.Sprint(o.Metadata["name"])] = o
		if o.Kind == "Deployment" {
			deployment = doc
		}
	}
	return objs, deployment
}

// TestChartLintsAndRenders: the chart passes `helm lint` (strict) and
// renders a Deployment pinned to control-plane nodes running serve, the
// witness's read-only RBAC (the static pod's rules, each resource named,
// never a wildcard, plus witness.customResources), a ServiceMonitor, a
// PrometheusRule holding exactly the rule file Prometheus loads in
// TestServeExportsToPrometheus, and the dashboard ConfigMap. By default
// /metrics is guarded by delegated auth: the ServiceMonitor sends the
// chart's scraper's token, the ClusterRole a scraper needs is shipped and
// bound to it, serve may ask for reviews; with metricsAuth none and a
// basic-auth web config, none of that is rendered. No bearer token is sent
// in clear: under delegated auth serve speaks TLS (a self-signed
// certificate it makes in an in-memory emptyDir, a mounted TLS Secret, or
// webConfig's own), its probes and the ServiceMonitor speak HTTPS on the
// port named https-metrics, the ServiceMonitor skipping verification of
// the self-signed certificate only. Every flag the Deployment passes is
// one serve takes. Values that cannot work together are refused.
func TestChartLintsAndRenders(t *testing.T) {
	parallel(t)
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "--set-string", "webConfig=basic_auth_users: {}")
	rules, err := os.ReadFile(rulesFile)
	mustNoErr(t, "read rules", err)
	var wantRules map[string]any
	mustNoErr(t, "parse rules", yaml.Unmarshal(rules, &wantRules))
	dashboard, err := os.ReadFile(dashboardFile)
	mustNoErr(t, "read dashboard", err)
	staticRBAC := staticPodRBAC(t)
	serveHelp := serveFlagsHelp(t)

	const (
		scraperToken  = "Secret/ghosts-regghost-scraper-token"
		serving       = "Secret/ghosts-regghost-serving"
		webSecret     = "Secret/ghosts-regghost-web-config"
		reader        = "ClusterRole/ghosts-regghost-metrics-reader"
		readerBinding = "ClusterRoleBinding/ghosts-regghost-metrics-reader"
		delegator     = "ClusterRoleBinding/ghosts-regghost-auth-delegator"
	)
	// What the Deployment and the ServiceMonitor say for each source of
	// TLS, and for none.
	// The chart's own CA and certificate (tls: selfSigned), mounted from
	// its Secret; the ServiceMonitor checks the endpoint against that CA.
	selfSigned := []string{"mountPath: /etc/regghost-tls", "secretName: ghosts-regghost-serving", "scheme: HTTPS\n", "name: https-metrics"}
	selfSignedEndpoint := []string{"port: https-metrics", "scheme: https", "name: ghosts-regghost-serving", "key: ca.crt", "serverName: ghosts-regghost.monitoring.svc"}
	plainHTTP := []string{"scheme: HTTP\n", "name: http-metrics"}
	tests := []struct {
		name string
		args []string
		// webConfig: a Secret is rendered and the Deployment reads it.
		webConfig bool
		auth      string
		// endpoint holds what the ServiceMonitor's endpoint must say, and
		// present which objects must (true) or must not (false) be rendered.
		endpoint []string
		present  map[string]bool
		// deployment is what the Deployment must say (its probes, where
		// TLS comes from); certDir whether serve makes its certificate.
		deployment []string
		certDir    bool
		// webYAML is what the web config Secret's web.yml must hold.
		webYAML []string
		// custom are the rules the witness's ClusterRole holds beyond the
		// static pod's (witness.customResources).
		custom []rbacv1.PolicyRule
	}{
		{name: "defaults", auth: "delegated", webConfig: true,
			endpoint:   append([]string{"authorization:", "type: Bearer", "name: ghosts-regghost-scraper-token", "key: token"}, selfSignedEndpoint...),
			present:    map[string]bool{scraperToken: true, reader: true, readerBinding: true, delegator: true, webSecret: true, serving: true},
			deployment: selfSigned, webYAML: []string{"cert_file: /etc/regghost-tls/tls.crt"}},
		{name: "Prometheus's own token", args: []string{"--set", "serviceMonitor.bearer=file", "--set", "metricsReader.subjects[0].kind=ServiceAccount,metricsReader.subjects[0].name=prometheus-k8s,metricsReader.subjects[0].namespace=monitoring"},
			auth: "delegated", webConfig: true, endpoint: append([]string{"bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"}, selfSignedEndpoint...),
			present: map[string]bool{scraperToken: false, reader: true, readerBinding: true, delegator: true, serving: true}, deployment: selfSigned},
		{name: "TLS web config", args: []string{"--set-string", "webConfig=tls_server_config:\n  cert_file: /etc/regghost/tls.crt\n  key_file: /etc/regghost/tls.key"},
			webConfig: true, auth: "delegated", endpoint: []string{"authorization:", "port: https-metrics", "scheme: https"},
			present:    map[string]bool{scraperToken: true, reader: true, delegator: true, webSecret: true, serving: false},
			deployment: []string{"scheme: HTTPS\n", "name: https-metrics"}, webYAML: []string{"cert_file: /etc/regghost/tls.crt"}},
		{name: "TLS Secret", args: []string{"--set", "tls.secretName=regghost-tls", "--set-string", "webConfig=rate_limit:\n  interval: 1s\n  burst: 10"},
			webConfig: true, auth: "delegated",
			endpoint:   []string{"authorization:", "port: https-metrics", "scheme: https", "name: regghost-tls", "key: ca.crt", "serverName: ghosts-regghost.monitoring.svc"},
			present:    map[string]bool{scraperToken: true, webSecret: true, serving: false},
			deployment: []string{"scheme: HTTPS\n", "name: https-metrics", "secretName: regghost-tls", "mountPath: /etc/regghost-tls"},
			webYAML:    []string{"cert_file: /etc/regghost-tls/tls.crt", "key_file: /etc/regghost-tls/tls.key", "burst: 10"}},
		{name: "web config without TLS", args: []string{"--set-string", "webConfig=http_server_config:\n  headers:\n    X-Frame-Options: deny"},
			webConfig: true, auth: "delegated", endpoint: append([]string{"authorization:"}, selfSignedEndpoint...),
			present: map[string]bool{webSecret: true, serving: true}, deployment: selfSigned, webYAML: []string{"X-Frame-Options: deny", "cert_file: /etc/regghost-tls/tls.crt"}},
		{name: "basic auth web config", args: []string{"--set", "metricsAuth=none", "--set-string", "webConfig=basic_auth_users:\n  prometheus: $2y$10$x"},
			// Passwords never in clear: the chart's own TLS.
			webConfig: true, auth: "none", endpoint: selfSignedEndpoint,
			present:    map[string]bool{scraperToken: false, reader: false, readerBinding: false, delegator: false, webSecret: true, serving: true},
			deployment: []string{"tcpSocket:", "name: https-metrics", "secretName: ghosts-regghost-serving"}, webYAML: []string{"prometheus:", "cert_file: /etc/regghost-tls/tls.crt"}},
		{name: "no auth", args: []string{"--set", "metricsAuth=none"},
			auth: "none", endpoint: []string{"port: http-metrics", "scheme: http\n"},
			present: map[string]bool{scraperToken: false, reader: false, delegator: false, webSecret: false, serving: false}, deployment: plainHTTP},
		{name: "no auth over serve's own TLS", args: []string{"--set", "metricsAuth=none", "--set", "tls.selfSigned=true"},
			auth: "none", webConfig: true, endpoint: selfSignedEndpoint,
			present: map[string]bool{scraperToken: false, delegator: false, serving: true}, deployment: selfSigned},
		{name: "custom resources", args: []string{"--set", "witness.customResources={widgets.example.com,gadgets.example.com,certificates.cert-manager.io,widgets.example.com}"},
			auth: "delegated", webConfig: true, endpoint: []string{"authorization:"}, present: map[string]bool{scraperToken: true, reader: true, delegator: true}, deployment: selfSigned,
			custom: []rbacv1.PolicyRule{
				{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"}, Verbs: []string{"get"}},
				{APIGroups: []string{"example.com"}, Resources: []string{"gadgets", "widgets"}, Verbs: []string{"get"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, deployment := renderChart(t, tt.args...)
			for _, name := range []string{"Deployment/ghosts-regghost", "Service/ghosts-regghost", "ServiceAccount/ghosts-regghost", "ClusterRole/ghosts-regghost",
				"ClusterRoleBinding/ghosts-regghost", "Role/ghosts-regghost-apiservers", "RoleBinding/ghosts-regghost-apiservers",
				"ServiceMonitor/ghosts-regghost", "PrometheusRule/ghosts-regghost", "ConfigMap/ghosts-regghost-dashboard"} {
				if _, ok := objs[name]; !ok {
					t.Errorf("no %s rendered", name)
				}
			}
			for name, want := range tt.present {
				if _, ok := objs[name]; ok != want {
					t.Errorf("%s rendered: %v, want %v", name, ok, want)
				}
			}
			for _, want := range []string{"- serve", "node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master", "operator: Exists", "type: Recreate", "hostNetwork: true", "readOnly: true", "--node-root=/host",
				"mountPath: /tmp", "emptyDir: {}", "--metrics-auth=" + tt.auth} {
				if !strings.Contains(deployment, want) {
					t.Errorf("the Deployment lacks %q:\n%s", want, deployment)
				}
			}
			for _, want := range tt.deployment {
				if !strings.Contains(deployment, want) {
					t.Errorf("the Deployment lacks %q:\n%s", want, deployment)
				}
			}
			if strings.Contains(deployment, "--web-config-file") != tt.webConfig {
				t.Errorf("--web-config-file in the Deployment: %v, want %v", !tt.webConfig, tt.webConfig)
			}
			if strings.Contains(deployment, "--cert-dir") != tt.certDir {
				t.Errorf("--cert-dir in the Deployment: %v, want %v", !tt.certDir, tt.certDir)
			}
			if tt.auth == "delegated" && !strings.Contains(deployment, "scheme: HTTPS") {
				t.Errorf("delegated auth without TLS:\n%s", deployment)
			}
			for _, a := range deploymentArgs(t, objs["Deployment/ghosts-regghost"]) {
				if name, _, _ := strings.Cut(a, "="); a != "serve" && !strings.Contains(serveHelp, name+" ") {
					t.Errorf("the Deployment passes %s, which serve does not take", name)
				}
			}
			if sec, ok := objs[serving]; ok {
				verifyServingSecret(t, sec, "ghosts-regghost.monitoring.svc")
			}
			if web, ok := objs[webSecret]; ok {
				got, _ := web.StringData["web.yml"].(string)
				for _, want := range tt.webYAML {
					if !strings.Contains(got, want) {
						t.Errorf("the web config Secret's web.yml lacks %q:\n%s", want, got)
					}
				}
			}
			port := "http-metrics"
			if strings.Contains(deployment, "name: https-metrics") {
				port = "https-metrics"
			}
			svc, err := yaml.Marshal(objs["Service/ghosts-regghost"].Spec)
			mustNoErr(t, "marshal the Service", err)
			for _, want := range []string{"name: " + port, "targetPort: " + port} {
				if !strings.Contains(string(svc), want) {
					t.Errorf("the Service lacks %q:\n%s", want, svc)
				}
			}
			endpoints, _ := objs["ServiceMonitor/ghosts-regghost"].Spec["endpoints"].([]any)
			if len(endpoints) != 1 {
				t.Fatalf("ServiceMonitor endpoints: %v", endpoints)
			}
			ep, err := yaml.Marshal(endpoints[0])
			mustNoErr(t, "marshal endpoint", err)
			for _, want := range tt.endpoint {
				if !strings.Contains(string(ep), want) {
					t.Errorf("the ServiceMonitor's endpoint lacks %q:\n%s", want, ep)
				}
			}
			if tt.auth == "none" && (strings.Contains(string(ep), "authorization") || strings.Contains(string(ep), "bearerTokenFile")) {
				t.Errorf("the ServiceMonitor sends a token without delegated auth:\n%s", ep)
			}
			if strings.Contains(string(ep), "insecureSkipVerify") != tt.certDir {
				t.Errorf("the ServiceMonitor skips verification: %v, want %v (only of serve's self-signed certificate):\n%s", !tt.certDir, tt.certDir, ep)
			}
			if s, ok := objs[scraperToken]; ok {
				if s.Type != "kubernetes.io/service-account-token" || s.Metadata["annotations"].(map[string]any)["kubernetes.io/service-account.name"] != "ghosts-regghost-scraper" {
					t.Errorf("the scraper's token Secret is not its ServiceAccount's token: %+v", s)
				}
			}
			if r, ok := objs[reader]; ok {
				want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
				if !reflect.DeepEqual(r.Rules, want) {
					t.Errorf("the metrics reader ClusterRole: %+v, want %+v", r.Rules, want)
				}
				if !reflect.DeepEqual(r.Rules, staticRBAC["ClusterRole/regghost-metrics-reader"].Rules) {
					t.Errorf("the chart's metrics reader differs from the static pod's")
				}
			}
			if b, ok := objs[delegator]; ok && b.RoleRef.Name != "system:auth-delegator" {
				t.Errorf("the auth delegator binding binds %s", b.RoleRef.Name)
			}
			for name, o := range objs {
				if o.Kind != "ClusterRole" && o.Kind != "Role" {
					continue
				}
				for _, r := range o.Rules {
					for _, v := range r.Verbs {
						if v != "get" && v != "list" && v != "watch" {
							t.Errorf("%s grants %q: serve only reads", name, v)
						}
					}
					for _, res := range append(append([]string(nil), r.Resources...), r.APIGroups...) {
						if strings.Contains(res, "*") || strings.Contains(res, "/") {
							t.Errorf("%s names %q: a wildcard or a subresource (nodes/proxy, pods/exec are reached by get)", name, res)
						}
					}
				}
			}
			for chart, static := range map[string]string{"ClusterRole/ghosts-regghost": "ClusterRole/regghost", "Role/ghosts-regghost-apiservers": "Role/regghost-apiservers"} {
				want := staticRBAC[static].Rules
				if chart == "ClusterRole/ghosts-regghost" {
					want = append(append([]rbacv1.PolicyRule(nil), want...), tt.custom...)
				}
				if got := objs[chart].Rules; !reflect.DeepEqual(got, want) {
					t.Errorf("the chart's %s differs from the static pod's %s:\n%+v\n%+v", chart, static, got, want)
				}
			}
			if got := objs["PrometheusRule/ghosts-regghost"].Spec; !reflect.DeepEqual(got, wantRules) {
				t.Errorf("the PrometheusRule's spec is not the rule file:\n got %v\nwant %v", got, wantRules)
			}
			if got, _ := objs["ConfigMap/ghosts-regghost-dashboard"].Data["regghost-dashboard.json"].(string); strings.TrimSpace(got) != strings.TrimSpace(string(dashboard)) {
				t.Errorf("the dashboard ConfigMap does not hold the dashboard file")
			}
		})
	}

	t.Run("refused values", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"--set-string", "webConfig=basic_auth_users:\n  prometheus: $2y$10$x"}, "one Authorization header"},
			{[]string{"--set", "metricsAuth=basic"}, `metricsAuth must be "delegated" or "none"`},
			{[]string{"--set", "tls.secretName=regghost-tls", "--set-string", "webConfig=tls_server_config:\n  cert_file: /a.crt\n  key_file: /a.key"}, "both give a certificate: set one"},
			{[]string{"--set", "serviceMonitor.bearer=header"}, `serviceMonitor.bearer must be "secret" or "file"`},
			{[]string{"--set", "witness.customResources={*.example.com}"}, `"*.example.com" is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources={widgets.*}"}, `"widgets.*" is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources={pods/exec}"}, `"pods/exec" is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources={widgets}"}, `"widgets" is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources={123}"}, `123 is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources={Widgets.Example.com}"}, `"Widgets.Example.com" is not <plural>.<group>`},
			{[]string{"--set", "witness.customResources=widgets.example.com"}, `witness.customResources must be a list`},
			// A chart packaged without its generated rules grants nothing,
			// and says so rather than render a role without rules.
			{[]string{"chart without rules"}, `files/witness-rules.yaml is missing or empty`},
		} {
			bin, err := helmBin()
			mustNoErr(t, "build helm", err)
			dir, args := chartDir, tt.args
			if args[0] == "chart without rules" {
				dir, args = filepath.Join(t.TempDir(), "regghost"), nil
				mustNoErr(t, "copy the chart", os.CopyFS(dir, os.DirFS(chartDir)))
				mustNoErr(t, "remove the rules", os.Remove(filepath.Join(dir, "files", "witness-rules.yaml")))
			}
			cmd := exec.Command(bin, append([]string{"template", "ghosts", dir}, args...)...)
			cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("helm template %v: %v, want a failure saying %q:\n%s", tt.args, err, tt.want, out)
			}
		}
	})
}

// serveFlagsHelp is what `regghost serve --help` and `regghost options`
// say: every flag serve takes.
func serveFlagsHelp(t *testing.T) string {
	t.Helper()
	help, _, code := runBinary(t, "", "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	// The flags every command takes are on 'regghost options'.
	global, _, code := runBinary(t, "", "options")
	if code != 0 {
		t.Fatalf("options: exit %d", code)
	}
	return help + global
}

// deploymentArgs are the arguments of a rendered Deployment's container.
func deploymentArgs(t *testing.T, d renderedObject) []string {
	t.Helper()
	b, err := yaml.Marshal(d.Spec["template"])
	mustNoErr(t, "marshal the pod template", err)
	var tmpl corev1.PodTemplateSpec
	mustNoErr(t, "parse the pod template", yaml.Unmarshal(b, &tmpl))
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers", len(tmpl.Spec.Containers))
	}
	return tmpl.Spec.Containers[0].Args
}

// staticPodRBAC reads deploy/static-pod/rbac.yaml by "Kind/name".
func staticPodRBAC(t *testing.T) map[string]renderedObject {
	t.Helper()
	b, err := os.ReadFile("../deploy/static-pod/rbac.yaml")
	mustNoErr(t, "read rbac.yaml", err)
	out := map[string]renderedObject{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		var o renderedObject
		mustNoErr(t, "parse rbac.yaml", yaml.UnmarshalStrict([]byte(doc), &struct {
			APIVersion string `json:"apiVersion"`
			*renderedObject
		}{renderedObject: &o}))
		out[o.Kind+"/"+fmt.Sprint(o.Metadata["name"])] = o
	}
	for _, want := range []string{"ClusterRole/regghost", "ClusterRoleBinding/regghost", "ClusterRoleBinding/regghost:auth-delegator", "Role/regghost-apiservers", "RoleBinding/regghost-apiservers", "ClusterRole/regghost-metrics-reader"} {
		if _, ok := out[want]; !ok {
			t.Errorf("rbac.yaml has no %s", want)
		}
	}
	for name, o := range out {
		for _, s := range o.Subjects {
			if s.Kind != "User" || s.Name != "regghost" {
				t.Errorf("%s binds %s %s, want the user regghost of regghost.conf", name, s.Kind, s.Name)
			}
		}
	}
	return out
}

// TestStaticPodManifest: the static pod manifest is a valid Pod whose
// flags serve knows, mounting the node's files read-only. Its bearer
// tokens never cross the network in clear: delegated auth over TLS, from
// a certificate serve makes in --cert-dir, an emptyDir in memory (the root
// file system is read-only), and probes speaking HTTPS.
func TestStaticPodManifest(t *testing.T) {
	parallel(t)
	b, err := os.ReadFile("../deploy/static-pod/regghost.yaml")
	mustNoErr(t, "read static pod", err)
	var pod corev1.Pod
	mustNoErr(t, "parse static pod", yaml.UnmarshalStrict(b, &pod))
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.Containers[0].Args) == 0 || pod.Spec.Containers[0].Args[0] != "serve" {
		t.Fatalf("the static pod does not run serve: %+v", pod.Spec.Containers)
	}
	help := serveFlagsHelp(t)
	for _, a := range pod.Spec.Containers[0].Args[1:] {
		name, _, _ := strings.Cut(a, "=")
		if !strings.Contains(help, name+" ") {
			t.Errorf("serve has no flag %s", name)
		}
	}
	// Its own identity (rbac.yaml), not admin.conf; /metrics guarded.
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--kubeconfig=/host/etc/kubernetes/regghost.conf", "--metrics-auth=delegated"} {
		if !strings.Contains(args, want) {
			t.Errorf("the static pod's arguments lack %s: %s", want, args)
		}
	}
	if strings.Contains(string(b), "admin.conf") {
		t.Errorf("the static pod still names admin.conf")
	}
	certDir := ""
	for _, a := range pod.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--cert-dir="); ok {
			certDir = v
		}
		if a == "--insecure-http" || strings.HasPrefix(a, "--insecure-http=") {
			t.Errorf("the static pod serves plain HTTP: %s", a)
		}
	}
	if certDir == "" {
		t.Errorf("the static pod's arguments lack --cert-dir: delegated auth over plain HTTP is refused")
	}
	c := pod.Spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("the %s probe does not speak HTTPS: %+v", name, p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "https-metrics" {
		t.Errorf("the metrics port is not named https-metrics: %+v", c.Ports)
	}
	// The node's files are read only; the two things written are a spill
	// file of findings, in an emptyDir at /tmp ($TMPDIR), and the serving
	// certificate, in an emptyDir in memory at --cert-dir, since the root
	// file system is read-only.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	tmp, certs := false, false
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.EmptyDir != nil && m.MountPath == "/tmp":
			tmp = true
		case v.EmptyDir != nil && m.MountPath == certDir:
			certs = true
			if v.EmptyDir.Medium != corev1.StorageMediumMemory {
				t.Errorf("the serving certificate's key is kept on the node's disk (emptyDir medium %q)", v.EmptyDir.Medium)
			}
		case !m.ReadOnly:
			t.Errorf("volume %s is mounted read-write", m.Name)
		}
	}
	if !tmp {
		t.Errorf("no writable /tmp for a scan's spilled findings (the root file system is read-only)")
	}
	if !certs {
		t.Errorf("no emptyDir at --cert-dir %s for the serving certificate (the root file system is read-only)", certDir)
	}
}

// verifyServingSecret checks the chart's own serving Secret: a
// kubernetes.io/tls pair whose certificate its ca.crt signed for name, the
// name the ServiceMonitor checks.
func verifyServingSecret(t *testing.T, sec renderedObject, name string) {
	t.Helper()
	data := func(k string) []byte {
		s, _ := sec.Data[k].(string)
		b, err := base64.StdEncoding.DecodeString(s)
		mustNoErr(t, "decode "+k, err)
		return b
	}
	if sec.Type != "kubernetes.io/tls" {
		t.Errorf("the serving Secret is of type %q", sec.Type)
	}
	if _, err := tls.X509KeyPair(data("tls.crt"), data("tls.key")); err != nil {
		t.Errorf("the serving Secret's pair does not match: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data("ca.crt")) {
		t.Fatal("the serving Secret's ca.crt holds no certificate")
	}
	block, _ := pemDecode(data("tls.crt"))
	cert, err := x509.ParseCertificate(block)
	mustNoErr(t, "parse tls.crt", err)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
		t.Errorf("the serving certificate does not verify against its CA for %s: %v", name, err)
	}
}

// pemDecode is the DER of the first PEM block of b.
func pemDecode(b []byte) ([]byte, bool) {
	p, _ := pem.Decode(b)
	if p == nil {
		return nil, false
	}
	return p.Bytes, true
}
