package e2e

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestUnstickPastAnUnavailableMetricsServer: the commonest stuck namespace
// in the field. metrics-server's APIService v1beta1.metrics.k8s.io points
// at its Service, which is there with no ready endpoint (its pods gone):
// the APIService is Available=False (MissingEndpoints), discovery of
// metrics.k8s.io fails, and every namespace deletion in the cluster hangs
// on NamespaceDeletionDiscoveryFailure (a real kube-controller-manager
// runs the namespace and endpoint controllers).
//   - unstick's dry run names the APIService, the Service, that it has no
//     ready endpoint and the condition's reason, and both ways out: bring
//     the backend back, or delete the APIService behind a backup, with
//     what stops meanwhile (kubectl top, HorizontalPodAutoscalers);
//   - --confirm without naming it is refused and changes nothing;
//   - the command the refusal prints, run as printed, deletes the
//     APIService (backed up) and the deletion finishes; only the APIService
//     and the namespace's keys changed;
//   - restore of that backup puts the APIService back, and only it.
func TestUnstickPastAnUnavailableMetricsServer(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller", "endpointslice-controller", "endpoints-controller")
	ctx := context.Background()
	const apiName = "v1beta1.metrics.k8s.io"
	// Where metrics-server's manifest puts it.
	_, err := c.kube.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: "kube-system",
		Labels: map[string]string{"k8s-app": "metrics-server"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"k8s-app": "metrics-server"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create service kube-system/metrics-server", err)
	apiKey := c.createAggregatedAPI(t, "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", nil)
	c.waitAPIServiceReason(t, apiName, "MissingEndpoints") // the endpoint controllers run: EndpointsNotFound is only on the way
	c.createNamespace(t, "team-a")
	c.createConfigMap(t, "team-a", "settings")
	c.createSecret(t, "team-a", "token")
	c.deleteAndWaitDiscoveryFailure(t, "team-a")
	apiBefore := c.value(t, apiKey)

	var printed string
	t.Run("the dry run names the backend and both ways out", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "team-a")
		checkCapture(t, "dry-run", code, out, errOut)
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"APIService " + apiName + " is unavailable", "service kube-system/metrics-server exists but has no ready endpoint",
			"Available=False MissingEndpoints", "bring service kube-system/metrics-server back",
			"`regghost unstick namespace team-a --delete-unavailable-apiservice " + apiName + " --confirm`",
			"`kubectl top` and HorizontalPodAutoscalers on CPU and memory stop", "until `regghost restore <its backup>` puts it back"} {
			if !strings.Contains(flat, want) {
				t.Errorf("the dry run does not say %q:\n%s", want, out)
			}
		}
		m := regexp.MustCompile("`(regghost unstick [^`]*--delete-unavailable-apiservice[^`]*)`").FindStringSubmatch(flat)
		if m == nil {
			t.Fatalf("no command to run in the dry run:\n%s", out)
		}
		printed = m[1]
	})
	if printed == "" {
		t.FailNow()
	}

	t.Run("--confirm without naming it is refused", func(t *testing.T) {
		before := c.state(t)
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "team-a", "--confirm", "--yes", "--backup-dir", root)
		if code == 0 || !strings.Contains(errOut, "--delete-unavailable-apiservice "+apiName) {
			t.Errorf("unstick --confirm: exit %d, want a refusal naming the way out: %s\n%s", code, errOut, out)
		}
		if after := c.value(t, apiKey); string(after) != string(apiBefore) {
			t.Errorf("a refused unstick changed %s", apiKey)
		}
		// The namespace controller keeps writing team-a's conditions.
		c.assertChangedOnly(t, "a refused unstick", before, c.keysUnder(t, "team-a"))
	})

	root := filepath.Join(shortTempDir(t), "backups")
	t.Run("the printed command ends the stall", func(t *testing.T) {
		before := c.state(t)
		args := append(strings.Fields(printed)[1:], "--yes", "--backup-dir", root)
		out, errOut, code := c.regghost(t, "", args...)
		checkCapture(t, "confirm", code, errOut, out)
		if code != 0 || !strings.Contains(out, "namespace team-a is gone, and nothing of it is left in etcd") {
			t.Fatalf("%s: exit %d: %s\n%s", printed, code, errOut, out)
		}
		flat := strings.Join(strings.Fields(out), " ")
		if !strings.Contains(flat, "APIService "+apiName+" was deleted while service kube-system/metrics-server is down: `kubectl top` and HorizontalPodAutoscalers on CPU and memory stop until it is put back") ||
			!strings.Contains(flat, "Put back: regghost restore "+root) {
			t.Errorf("the result does not say what stops and how to put it back:\n%s", out)
		}
		if c.value(t, apiKey) != nil {
			t.Errorf("%s is still in etcd", apiKey)
		}
		changed := append(append(c.keysUnder(t, "team-a"), keysOf(before, "team-a")...), apiKey)
		c.assertChangedOnly(t, "unstick "+"--delete-unavailable-apiservice", before, changed)
	})

	t.Run("restore puts the APIService back, and only it", func(t *testing.T) {
		dir := onlyBackupDir(t, root)
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes")
		checkCapture(t, "restore", code, out, errOut)
		if code != 0 {
			t.Fatalf("restore: exit %d: %s\n%s", code, errOut, out)
		}
		if after := c.value(t, apiKey); string(after) != string(apiBefore) {
			t.Errorf("%s is not back as it was", apiKey)
		}
		if _, err := c.dyn.Resource(apiServiceGVR).Get(ctx, apiName, metav1.GetOptions{}); err != nil {
			t.Errorf("the API server does not serve APIService %s again: %v", apiName, err)
		}
		c.assertChangedOnly(t, "restore", before, []string{apiKey})
	})
}

// keysUnder lists the keys of namespace ns now in etcd.
func (c *cluster) keysUnder(t *testing.T, ns string) []string {
	t.Helper()
	return keysOf(c.state(t), ns)
}

// ofNamespace says whether key is namespace ns's own, one of its objects,
// or an event (the controllers' record of what they did).
func ofNamespace(key, ns string) bool {
	return strings.Contains(key, "/"+ns+"/") || strings.HasSuffix(key, "/namespaces/"+ns) || strings.HasPrefix(key, "/registry/events/")
}

// TestUnstickPastAFailingAggregatedAPI: FailedDiscoveryCheck, the other
// face of a backend that is down: the Service has a ready endpoint (its
// EndpointSlice says so), but nothing answers there, so the aggregator's
// check fails and every namespace deletion hangs. unstick names it the
// same way, and the printed command ends the stall.
func TestUnstickPastAFailingAggregatedAPI(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	const apiName = "v1beta1.custom.metrics.k8s.io"
	_, err := c.kube.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom-metrics", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create service kube-system/custom-metrics", err)
	// A ready endpoint where nothing listens (an EndpointSlice may not
	// name loopback: this machine's own address, else TEST-NET-1).
	port, ready := int32(freePort(t)), true
	addr := "192.0.2.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				addr = n.IP.String()
				break
			}
		}
	}
	name, proto := "https", corev1.ProtocolTCP
	_, err = c.kube.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "custom-metrics-1", Namespace: "kube-system", Labels: map[string]string{discoveryv1.LabelServiceName: "custom-metrics"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}}, metav1.CreateOptions{})
	mustNoErr(t, "create the EndpointSlice", err)
	apiKey := c.createAggregatedAPI(t, "custom.metrics.k8s.io", "v1beta1", "kube-system", "custom-metrics", nil)
	c.waitAPIServiceReason(t, apiName, "FailedDiscoveryCheck")
	c.createNamespace(t, "team-b")
	c.createConfigMap(t, "team-b", "settings")
	c.deleteAndWaitDiscoveryFailure(t, "team-b")

	out, errOut, code := c.regghost(t, "", "unstick", "namespace", "team-b")
	flat := strings.Join(strings.Fields(out), " ")
	m := regexp.MustCompile("`(regghost unstick [^`]*--delete-unavailable-apiservice[^`]*)`").FindStringSubmatch(flat)
	if code != 0 || m == nil || !strings.Contains(flat, "service kube-system/custom-metrics has a ready endpoint, but the API server's check of it fails (FailedDiscoveryCheck") ||
		!strings.Contains(flat, "HorizontalPodAutoscalers on custom metrics stop") {
		t.Fatalf("the dry run does not name the failing backend and the way out: exit %d: %s\n%s", code, errOut, out)
	}
	before := c.state(t)
	root := filepath.Join(t.TempDir(), "backups")
	out, errOut, code = c.regghost(t, "", append(strings.Fields(m[1])[1:], "--yes", "--backup-dir", root)...)
	if code != 0 || !strings.Contains(out, "namespace team-b is gone, and nothing of it is left in etcd") {
		t.Fatalf("%s: exit %d: %s\n%s", m[1], code, errOut, out)
	}
	changed := []string{apiKey}
	for k := range before.kvs {
		if ofNamespace(k, "team-b") {
			changed = append(changed, k)
		}
	}
	c.assertChangedOnly(t, m[1], before, append(changed, c.keysUnder(t, "team-b")...))
}
