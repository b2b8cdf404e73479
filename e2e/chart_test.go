package e2e

import (
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	Rules    []struct {
		Verbs []string `json:"verbs"`
	} `json:"rules"`
}

// TestChartLintsAndRenders: the chart passes `helm lint` (strict) and
// renders, with and without a web config, a Deployment pinned to
// control-plane nodes running serve, read-only RBAC, a ServiceMonitor, a
// PrometheusRule holding exactly the rule file Prometheus loads in
// TestServeExportsToPrometheus, and the dashboard ConfigMap.
func TestChartLintsAndRenders(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "--set-string", "webConfig=basic_auth_users: {}")
	rules, err := os.ReadFile(rulesFile)
	mustNoErr(t, "read rules", err)
	var wantRules map[string]any
	mustNoErr(t, "parse rules", yaml.Unmarshal(rules, &wantRules))
	dashboard, err := os.ReadFile(dashboardFile)
	mustNoErr(t, "read dashboard", err)

	tests := []struct {
		name string
		args []string
		// webConfig: a Secret is rendered and the Deployment reads it.
		webConfig bool
	}{
		{name: "defaults"},
		{name: "web config", args: []string{"--set-string", "webConfig=basic_auth_users:\n  prometheus: $2y$10$x"}, webConfig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := helm(t, append([]string{"template", "ghosts", chartDir, "--namespace", "monitoring"}, tt.args...)...)
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
				objs[o.Kind] = o
				if o.Kind == "Deployment" {
					deployment = doc
				}
			}
			for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
				if _, ok := objs[kind]; !ok {
					t.Errorf("no %s rendered", kind)
				}
			}
			if _, ok := objs["Secret"]; ok != tt.webConfig {
				t.Errorf("web config Secret rendered: %v, want %v", ok, tt.webConfig)
			}
			for _, want := range []string{"- serve", "node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master", "operator: Exists", "type: Recreate", "hostNetwork: true", "readOnly: true", "--node-root=/host",
				"mountPath: /tmp", "emptyDir: {}"} {
				if !strings.Contains(deployment, want) {
					t.Errorf("the Deployment lacks %q:\n%s", want, deployment)
				}
			}
			if strings.Contains(deployment, "--web-config-file") != tt.webConfig {
				t.Errorf("--web-config-file in the Deployment: %v, want %v", !tt.webConfig, tt.webConfig)
			}
			for _, r := range objs["ClusterRole"].Rules {
				for _, v := range r.Verbs {
					if v != "get" && v != "list" && v != "watch" {
						t.Errorf("the ClusterRole grants %q: serve only reads", v)
					}
				}
			}
			if got := objs["PrometheusRule"].Spec; !reflect.DeepEqual(got, wantRules) {
				t.Errorf("the PrometheusRule's spec is not the rule file:\n got %v\nwant %v", got, wantRules)
			}
			if got, _ := objs["ConfigMap"].Data["regghost-dashboard.json"].(string); strings.TrimSpace(got) != strings.TrimSpace(string(dashboard)) {
				t.Errorf("the dashboard ConfigMap does not hold the dashboard file")
			}
		})
	}
}

// TestStaticPodManifest: the static pod manifest is a valid Pod whose
// flags serve knows, mounting the node's files read-only.
func TestStaticPodManifest(t *testing.T) {
	b, err := os.ReadFile("../deploy/static-pod/regghost.yaml")
	mustNoErr(t, "read static pod", err)
	var pod corev1.Pod
	mustNoErr(t, "parse static pod", yaml.UnmarshalStrict(b, &pod))
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.Containers[0].Args) == 0 || pod.Spec.Containers[0].Args[0] != "serve" {
		t.Fatalf("the static pod does not run serve: %+v", pod.Spec.Containers)
	}
	help, _, code := runBinary(t, "", "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	for _, a := range pod.Spec.Containers[0].Args[1:] {
		name, _, _ := strings.Cut(a, "=")
		if !strings.Contains(help, name+" ") {
			t.Errorf("serve has no flag %s", name)
		}
	}
	// The node's files are read only; the one thing written is a spill
	// file of findings, in an emptyDir at /tmp ($TMPDIR), since the root
	// file system is read-only.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	tmp := false
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.EmptyDir != nil && m.MountPath == "/tmp":
			tmp = true
		case !m.ReadOnly:
			t.Errorf("volume %s is mounted read-write", m.Name)
		}
	}
	if !tmp {
		t.Errorf("no writable /tmp for a scan's spilled findings (the root file system is read-only)")
	}
}
