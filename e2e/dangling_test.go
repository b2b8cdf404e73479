package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// The tests of this file leave live objects pointing into what a
// force-deleted namespace took away (dangling references), on a real
// cluster, and run the real regghost against them: scan reports each one,
// gone told from down; `regghost dangling --confirm` fixes the gone ones
// through the API server with a backup that `regghost restore` puts back;
// unstick deletes an APIService that dangles when a namespace deletion
// hangs on it, and refuses one that is only down.

const apiServicePrefix = "/registry/apiregistration.k8s.io/apiservices/"

// createHeadlessService creates a Service listening on 443 without a
// ClusterIP: no IP is allocated, so no allocator repair loop writes etcd
// behind a test's back once the Service is force-deleted.
func (c *cluster) createHeadlessService(t *testing.T, ns, name string) {
	t.Helper()
	_, err := c.kube.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create service "+ns+"/"+name, err)
}

// createAggregatedAPI registers <version>.<group> as served by the Service
// ns/svc and returns its key.
func (c *cluster) createAggregatedAPI(t *testing.T, group, version, ns, svc string, annotations map[string]string) string {
	t.Helper()
	name := version + "." + group
	meta := map[string]interface{}{"name": name}
	if len(annotations) > 0 {
		a := map[string]interface{}{}
		for k, v := range annotations {
			a[k] = v
		}
		meta["annotations"] = a
	}
	_, err := c.dyn.Resource(apiServiceGVR).Create(context.Background(), &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta,
		"spec": map[string]interface{}{"group": group, "version": version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"insecureSkipTLSVerify": true, "service": map[string]interface{}{"namespace": ns, "name": svc}},
	}}, metav1.CreateOptions{})
	mustNoErr(t, "create APIService "+name, err)
	return apiServicePrefix + name
}

// waitAPIServiceReason waits until the aggregator's availability controller
// has set the APIService's Available condition for one of reasons: the
// API server has seen the Service as it now is, and writes the APIService's
// status no more.
func (c *cluster) waitAPIServiceReason(t *testing.T, name string, reasons ...string) {
	t.Helper()
	waitFor(t, 60*time.Second, "APIService "+name+" Available: "+strings.Join(reasons, " or "), func() error {
		u, err := c.dyn.Resource(apiServiceGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]interface{})
			if m["type"] != "Available" {
				continue
			}
			reason, _ := m["reason"].(string)
			if contains(reasons, reason) {
				return nil
			}
			return errString("Available " + reason)
		}
		return errString("no Available condition yet")
	})
}

// apiServiceOfAForceDeletedNamespace registers the APIService
// v1beta1.custom.metrics.example.com as served by the headless Service
// metrics-ns/metrics, then force-deletes the namespace's key: the Service
// is left a ghost. It returns the APIService's name and key.
func (c *cluster) apiServiceOfAForceDeletedNamespace(t *testing.T) (name, key string) {
	t.Helper()
	c.createNamespace(t, "metrics-ns")
	c.createHeadlessService(t, "metrics-ns", "metrics")
	key = c.createAggregatedAPI(t, "custom.metrics.example.com", "v1beta1", "metrics-ns", "metrics", nil)
	c.forceDelete(t, "/registry/namespaces/metrics-ns")
	return "v1beta1.custom.metrics.example.com", key
}

// deleteAndWaitDiscoveryFailure deletes a namespace through the API server
// and waits until its deletion hangs on a discovery failure.
func (c *cluster) deleteAndWaitDiscoveryFailure(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	mustNoErr(t, "delete namespace "+ns, c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	c.waitDiscoveryFailure(t, ns)
}

// waitDiscoveryFailure waits until namespace ns's deletion hangs on a
// discovery failure.
func (c *cluster) waitDiscoveryFailure(t *testing.T, ns string) {
	t.Helper()
	c.waitNamespaceCondition(t, ns, corev1.NamespaceDeletionDiscoveryFailure)
}

// waitNamespaceCondition waits until the namespace controller sets
// condition cond of namespace ns, being deleted.
func (c *cluster) waitNamespaceCondition(t *testing.T, ns string, cond corev1.NamespaceConditionType) {
	t.Helper()
	waitFor(t, 90*time.Second, "namespace "+ns+" to hang on "+string(cond), func() error {
		n, err := c.kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cd := range n.Status.Conditions {
			if cd.Type == cond && cd.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errString("no " + string(cond) + " condition yet")
	})
}

// danglingRefOf returns the reference of key at field, or nil.
func danglingRefOf(refs []etcdscan.DanglingRef, key, field string) *etcdscan.DanglingRef {
	for i := range refs {
		if refs[i].Key == key && refs[i].Field == field {
			return &refs[i]
		}
	}
	return nil
}

// describeRefs is refs in one line each, for failure messages.
func describeRefs(refs []etcdscan.DanglingRef) string {
	var s []string
	for _, d := range refs {
		s = append(s, d.Key+" "+d.Field+" -> "+d.Target+" "+string(d.State))
	}
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, "\n")
}

// danglingDoc is what `regghost dangling -o json` prints.
type danglingDoc struct {
	DryRun     *bool                  `json:"dryRun"`
	References []etcdscan.DanglingRef `json:"references"`
	Results    []json.RawMessage      `json:"results"`
}

// danglingDryRun runs `regghost dangling -o json` and checks it is a dry run
// that exits 0, or 3 when a reference's target is gone.
func (c *cluster) danglingDryRun(t *testing.T, args ...string) *danglingDoc {
	t.Helper()
	out, errOut, code := c.regghost(t, "", append([]string{"dangling", "-o", "json"}, args...)...)
	if code != 0 && code != 3 {
		t.Fatalf("dangling dry run: exit %d, want 0 (nothing gone) or 3 (a reference whose target is gone): %s\n%s", code, errOut, out)
	}
	var doc danglingDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("dangling -o json is not JSON: %v\n%s", err, out)
	}
	if doc.DryRun == nil || !*doc.DryRun || len(doc.Results) != 0 {
		t.Errorf("dangling dry run: dryRun %v, %d results, want dryRun true and no results:\n%s", doc.DryRun, len(doc.Results), out)
	}
	return &doc
}

// backupHolding returns the backup directory under root that holds key.
func backupHolding(t *testing.T, root, key string) (string, *backup.Backup) {
	t.Helper()
	entries, err := os.ReadDir(root)
	mustNoErr(t, "read backupDir root", err)
	var seen []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		b, err := backup.ReadBackup(dir)
		if err != nil {
			seen = append(seen, e.Name()+": "+err.Error())
			continue
		}
		for _, en := range b.Entries {
			if en.Key == key {
				return dir, b
			}
			seen = append(seen, e.Name()+": "+en.Key)
		}
	}
	t.Fatalf("no backup under %s holds %s; seen: %v", root, key, seen)
	return "", nil
}

func backupEntry(b *backup.Backup, key string) *backup.Entry {
	for i := range b.Entries {
		if b.Entries[i].Key == key {
			return &b.Entries[i]
		}
	}
	return nil
}

// TestDanglingAPIServiceUnsticksANamespace: an APIService whose namespace
// and Service were force-deleted makes every namespace deletion hang on a
// discovery failure. scan reports the reference gone (two witnesses) and
// exits 3; unstick names the APIService as dangling, deletes it with a
// backup and waits for the namespace to go; restore puts the APIService
// back.
func TestDanglingAPIServiceUnsticksANamespace(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	apiName, apiKey := c.apiServiceOfAForceDeletedNamespace(t)
	c.forceDelete(t, "/registry/services/specs/metrics-ns/metrics")
	c.waitAPIServiceReason(t, apiName, "ServiceNotFound")
	c.createNamespace(t, "app")
	c.createConfigMap(t, "app", "settings")
	c.deleteAndWaitDiscoveryFailure(t, "app")

	t.Run("scan reports the APIService's Service gone and exits 3", func(t *testing.T) {
		rep, code := c.scanJSON(t)
		if code != 3 {
			t.Errorf("scan exit %d, want 3", code)
		}
		d := danglingRefOf(rep.Dangling, apiKey, "spec.service")
		if d == nil {
			t.Fatalf("no dangling spec.service of %s; dangling:\n%s", apiKey, describeRefs(rep.Dangling))
		}
		if d.State != etcdscan.DanglingGone || d.Kind != "APIService" || d.Name != apiName || d.TargetNamespace != "metrics-ns" || d.SingleWitness {
			t.Errorf("reference %+v, want APIService %s gone into metrics-ns with two witnesses", *d, apiName)
		}
	})

	t.Run("unstick's dry run names the dangling APIService", func(t *testing.T) {
		before := c.value(t, apiKey)
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app")
		low := strings.ToLower(out)
		if !strings.Contains(out, apiName) || !(strings.Contains(low, "dangling") || strings.Contains(low, "gone")) {
			t.Errorf("unstick dry run does not name %s as dangling: exit %d: %s\n%s", apiName, code, errOut, out)
		}
		if after := c.value(t, apiKey); string(after) != string(before) {
			t.Errorf("the dry run changed %s", apiKey)
		}
	})

	root := filepath.Join(t.TempDir(), "backups")
	var backupDir string
	t.Run("unstick deletes the APIService and the namespace finishes", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 {
			t.Fatalf("unstick --confirm: exit %d: %s\n%s", code, errOut, out)
		}
		if _, err := c.kube.CoreV1().Namespaces().Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace app after unstick: %v, want not found\n%s", err, out)
		}
		if c.value(t, "/registry/namespaces/app") != nil {
			t.Error("/registry/namespaces/app is still in etcd")
		}
		if c.value(t, apiKey) != nil {
			t.Errorf("%s is still in etcd", apiKey)
		}
		if _, err := c.dyn.Resource(apiServiceGVR).Get(ctx, apiName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("APIService %s after unstick: %v, want not found", apiName, err)
		}
		backupDir, _ = backupHolding(t, root, apiKey)
	})

	t.Run("restore refuses the APIService while its Service is gone, then puts it back", func(t *testing.T) {
		if backupDir == "" {
			t.Skip("no backup of the APIService")
		}
		// Written back now, it would hang every namespace deletion again.
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "restore", backupDir, "--confirm", "--yes")
		if code != 1 || !strings.Contains(oneLine(out), "refused") || !strings.Contains(oneLine(out+errOut), "metrics-ns/metrics") {
			t.Errorf("restore with the Service gone: exit %d: %s\n%s", code, errOut, out)
		}
		c.assertChangedOnly(t, "a refused restore", before, nil)
		c.createNamespace(t, "metrics-ns")
		_, err := c.kube.CoreV1().Services("metrics-ns").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metrics", Namespace: "metrics-ns"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
		mustNoErr(t, "create Service metrics-ns/metrics again", err)
		out, errOut, code = c.regghost(t, "", "restore", backupDir, "--confirm", "--yes")
		if code != 0 {
			t.Fatalf("restore: exit %d: %s\n%s", code, errOut, out)
		}
		if c.value(t, apiKey) == nil {
			t.Errorf("%s is not back after restore:\n%s", apiKey, out)
		}
	})
}

// TestDownAPIServiceIsNeverDeleted: an APIService whose Service exists
// without a ready endpoint is down, not dangling. scan reports it down and
// does not exit 3 for it; `dangling --confirm` leaves it (and a
// PersistentVolume whose claim is gone: report only) untouched; unstick
// refuses a namespace stuck on it and changes nothing.
func TestDownAPIServiceIsNeverDeleted(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	const apiName = "v1beta1.down.example.com"
	c.createNamespace(t, "metrics-down")
	c.createHeadlessService(t, "metrics-down", "metrics")
	apiKey := c.createAggregatedAPI(t, "down.example.com", "v1beta1", "metrics-down", "metrics", nil)
	c.waitAPIServiceReason(t, apiName, "EndpointsNotFound", "MissingEndpoints")

	t.Run("scan reports it down and does not exit 3", func(t *testing.T) {
		rep, code := c.scanJSON(t)
		d := danglingRefOf(rep.Dangling, apiKey, "spec.service")
		if d == nil {
			t.Fatalf("no reference of %s; dangling:\n%s", apiKey, describeRefs(rep.Dangling))
		}
		if d.State != etcdscan.DanglingDown || d.TargetNamespace != "metrics-down" {
			t.Errorf("reference %+v, want down into metrics-down", *d)
		}
		if code != 0 {
			t.Errorf("scan exit %d, want 0 (a down reference is no ghost); %d findings, dangling:\n%s", code, len(rep.Findings), describeRefs(rep.Dangling))
		}
	})

	t.Run("dangling --confirm touches neither a down APIService nor a volume", func(t *testing.T) {
		pvKey := "/registry/persistentvolumes/orphan-pv"
		_, err := c.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "orphan-pv"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/regghost-e2e-orphan-pv"}},
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "vanished", Name: "data"},
			}}, metav1.CreateOptions{})
		mustNoErr(t, "create PV", err)
		doc := c.danglingDryRun(t)
		if d := danglingRefOf(doc.References, pvKey, "spec.claimRef"); d == nil || d.State != etcdscan.DanglingGone {
			t.Errorf("dry run: reference of %s %+v, want spec.claimRef gone; references:\n%s", pvKey, d, describeRefs(doc.References))
		}
		if d := danglingRefOf(doc.References, apiKey, "spec.service"); d != nil && d.State != etcdscan.DanglingDown {
			t.Errorf("dry run: reference of %s is %s, want down", apiKey, d.State)
		}
		apiBefore := c.value(t, apiKey)
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--backup-dir", filepath.Join(t.TempDir(), "backups"))
		t.Logf("dangling --confirm: exit %d: %s\n%s", code, errOut, out)
		c.assertUnchanged(t, "dangling --confirm with only a down APIService and a volume", before)
		if after := c.value(t, apiKey); after == nil || string(after) != string(apiBefore) {
			t.Errorf("dangling --confirm changed or deleted %s", apiKey)
		}
		if c.value(t, pvKey) == nil {
			t.Errorf("dangling --confirm deleted %s", pvKey)
		}
	})

	t.Run("unstick refuses a namespace stuck on it and changes nothing", func(t *testing.T) {
		c.createNamespace(t, "stuck")
		c.createConfigMap(t, "stuck", "settings")
		c.deleteAndWaitDiscoveryFailure(t, "stuck")
		// The namespace controller keeps writing the namespace's status:
		// the refusal is checked on the APIService, which only regghost
		// would write.
		before := c.value(t, apiKey)
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "stuck", "--confirm", "--yes", "--backup-dir", root)
		if code == 0 {
			t.Errorf("unstick of a namespace stuck on a down APIService: exit 0, want a refusal:\n%s", out)
		}
		if !strings.Contains(out+errOut, apiName) {
			t.Errorf("the refusal does not name %s: exit %d: %s\n%s", apiName, code, errOut, out)
		}
		if after := c.value(t, apiKey); after == nil || string(after) != string(before) {
			t.Errorf("a refused unstick changed or deleted %s", apiKey)
		}
		if _, err := c.kube.CoreV1().Namespaces().Get(ctx, "stuck", metav1.GetOptions{}); err != nil {
			t.Errorf("namespace stuck: %v", err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("a refused unstick wrote %s", root)
		}
	})
}

// TestDanglingWebhookBlocksACreate: admission webhooks whose Service was
// force-deleted with its namespace (failurePolicy Fail) refuse every
// ConfigMap create in a guarded namespace. `dangling --confirm` deletes the
// configuration none of whose webhooks is left and removes only the
// dangling webhook of one whose other webhook is live; the create then
// succeeds, and restore puts both configurations back as they were.
func TestDanglingWebhookBlocksACreate(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	vwc := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(2)
	hook := func(name, ns, svc string, policy *admissionregistrationv1.FailurePolicyType, selector map[string]string) admissionregistrationv1.ValidatingWebhook {
		path := "/validate"
		return admissionregistrationv1.ValidatingWebhook{Name: name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svc, Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy: policy, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: selector}}
	}
	guarded := map[string]string{"guarded": "yes"}

	c.createNamespace(t, "webhook-ns")
	c.createHeadlessService(t, "webhook-ns", "hook")
	// A live webhook: its Service has a ready endpoint. It matches no
	// namespace (and would be ignored if called): only the dangling
	// webhooks stand in the way of a create.
	c.createNamespace(t, "live-ns")
	c.createHeadlessService(t, "live-ns", "live")
	ready, port, proto := true, int32(443), corev1.ProtocolTCP
	portName := "https"
	_, err := c.kube.DiscoveryV1().EndpointSlices("live-ns").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "live-1", Namespace: "live-ns", Labels: map[string]string{discoveryv1.LabelServiceName: "live"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create EndpointSlice", err)
	_, err = vwc.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("guard.example.com", "webhook-ns", "hook", &fail, guarded)}}, metav1.CreateOptions{})
	mustNoErr(t, "create guard", err)
	_, err = vwc.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mixed"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("dangling.example.com", "webhook-ns", "hook", &fail, guarded),
			hook("live.example.com", "live-ns", "live", &ignore, map[string]string{"matches": "nothing"}),
		}}, metav1.CreateOptions{})
	mustNoErr(t, "create mixed", err)
	c.forceDelete(t, "/registry/namespaces/webhook-ns")
	c.forceDelete(t, "/registry/services/specs/webhook-ns/hook")
	// kube-apiserver keeps webhook configurations under the resource name
	// alone, without their group (unlike APIServices and CRDs).
	guardKey := "/registry/validatingwebhookconfigurations/guard"
	mixedKey := "/registry/validatingwebhookconfigurations/mixed"
	_, err = c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Labels: guarded}}, metav1.CreateOptions{})
	mustNoErr(t, "create namespace guarded", err)

	t.Run("a ConfigMap create fails calling the webhook", func(t *testing.T) {
		n := 0
		waitFor(t, 60*time.Second, "a create in guarded to fail calling the webhook", func() error {
			n++
			_, err := c.kube.CoreV1().ConfigMaps("guarded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + strconv.Itoa(n), Namespace: "guarded"}}, metav1.CreateOptions{})
			if err == nil {
				return errString("created")
			}
			if !strings.Contains(err.Error(), "failed calling webhook") {
				return err
			}
			return nil
		})
	})

	t.Run("scan and the dry run report both dangling webhooks, not the live one", func(t *testing.T) {
		rep, code := c.scanJSON(t)
		if code != 3 {
			t.Errorf("scan exit %d, want 3", code)
		}
		refs := rep.Dangling
		if g, m := danglingRefOf(refs, guardKey, "webhooks[guard.example.com].clientConfig.service"), danglingRefOf(refs, mixedKey, "webhooks[dangling.example.com].clientConfig.service"); g == nil || m == nil ||
			g.State != etcdscan.DanglingGone || m.State != etcdscan.DanglingGone || g.SingleWitness || m.SingleWitness {
			t.Errorf("scan: want both dangling webhooks gone with two witnesses; dangling:\n%s", describeRefs(refs))
		}
		if l := danglingRefOf(refs, mixedKey, "webhooks[live.example.com].clientConfig.service"); l != nil {
			t.Errorf("scan reports the live webhook: %+v", *l)
		}
		before := c.state(t)
		doc := c.danglingDryRun(t, "-n", "webhook-ns")
		c.assertUnchanged(t, "the dangling dry run", before)
		g := danglingRefOf(doc.References, guardKey, "webhooks[guard.example.com].clientConfig.service")
		m := danglingRefOf(doc.References, mixedKey, "webhooks[dangling.example.com].clientConfig.service")
		if g == nil || m == nil {
			t.Fatalf("dry run -n webhook-ns: want both dangling webhooks; references:\n%s", describeRefs(doc.References))
		}
		if !strings.Contains(g.Fix, "delete") || !strings.Contains(m.Fix, "remove") {
			t.Errorf("fixes: guard %q (want a delete), mixed %q (want a removal)", g.Fix, m.Fix)
		}
		for _, d := range doc.References {
			if d.TargetNamespace != "webhook-ns" {
				t.Errorf("dry run -n webhook-ns lists a reference into %s: %s %s", d.TargetNamespace, d.Key, d.Field)
			}
		}
	})

	root := filepath.Join(t.TempDir(), "backups")
	var backupDir string
	t.Run("dangling --confirm deletes guard and trims mixed", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 {
			t.Fatalf("dangling --confirm: exit %d: %s\n%s", code, errOut, out)
		}
		if _, err := vwc.Get(ctx, "guard", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("guard after the fix: %v, want not found", err)
		}
		if c.value(t, guardKey) != nil {
			t.Errorf("%s is still in etcd", guardKey)
		}
		m, err := vwc.Get(ctx, "mixed", metav1.GetOptions{})
		if err != nil {
			t.Errorf("mixed after the fix: %v", err)
		} else if len(m.Webhooks) != 1 || m.Webhooks[0].Name != "live.example.com" {
			var names []string
			for _, w := range m.Webhooks {
				names = append(names, w.Name)
			}
			t.Errorf("mixed has webhooks %v, want only live.example.com", names)
		}
		dir := onlyBackupDir(t, root)
		if !strings.Contains(filepath.Base(dir), "dangling") {
			t.Errorf("backup directory %s is not named <timestamp>-dangling-...", dir)
		}
		b, err := backup.ReadBackup(dir)
		mustNoErr(t, "read backup", err)
		rewritten, err := backup.Written(dir, backup.ActionDangling, etcdwrite.Rewritten)
		mustNoErr(t, "read the audit log", err)
		if e := backupEntry(b, guardKey); e == nil || rewritten[guardKey] != 0 {
			t.Errorf("backup entry of %s: %+v (rewritten at %d), want a deleted key", guardKey, e, rewritten[guardKey])
		}
		if e := backupEntry(b, mixedKey); e == nil || rewritten[mixedKey] == 0 {
			t.Errorf("backup entry of %s: %+v, want a key rewritten at a revision the audit log records", mixedKey, e)
		}
		backupDir = dir
	})

	t.Run("the create succeeds", func(t *testing.T) {
		waitFor(t, 30*time.Second, "a ConfigMap create in guarded", func() error {
			_, err := c.kube.CoreV1().ConfigMaps("guarded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-fix", Namespace: "guarded"}}, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	})

	t.Run("restore puts both configurations back", func(t *testing.T) {
		if backupDir == "" {
			t.Skip("no backup")
		}
		out, errOut, code := c.regghost(t, "", "restore", backupDir, "--confirm", "--yes")
		if code != 0 {
			t.Fatalf("restore: exit %d: %s\n%s", code, errOut, out)
		}
		if c.value(t, guardKey) == nil {
			t.Errorf("%s is not back", guardKey)
		}
		m, err := vwc.Get(ctx, "mixed", metav1.GetOptions{})
		if err != nil || len(m.Webhooks) != 2 {
			t.Errorf("mixed after restore: %v, %d webhooks, want 2", err, len(m.Webhooks))
		}
	})
}

// canIListPods asks kubectl auth can-i whether user may list pods in ns:
// "yes" or "no".
func (c *cluster) canIListPods(t *testing.T, user, ns string) string {
	t.Helper()
	cmd := exec.Command(binsFor(t).kubectl, "--kubeconfig", c.kubeconfig, "auth", "can-i", "list", "pods", "-n", ns, "--as", user)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("kubectl: %v", err)
	}
	answer := strings.TrimSpace(out.String())
	if answer != "yes" && answer != "no" {
		t.Fatalf("kubectl auth can-i: %q: %s", answer, errOut.String())
	}
	return answer
}

// TestDanglingBindingSubjectComesBack: a ClusterRoleBinding and a
// RoleBinding grant a role to a ServiceAccount whose namespace was
// force-deleted. scan reports the subject gone; a namespace and account
// created again under the same names silently hold the grant. After
// `dangling --confirm` the ClusterRoleBinding keeps only its live subject,
// the RoleBinding (no subject left) is gone, and the account created again
// holds nothing.
func TestDanglingBindingSubjectComesBack(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	const builder, runner = "system:serviceaccount:ci:builder", "system:serviceaccount:ops:runner"
	if got := c.canIListPods(t, "system:serviceaccount:nobody:none", "ci"); got != "no" {
		t.Fatalf("an account bound to nothing may list pods (%s): the API server does not authorize with RBAC", got)
	}
	sa := func(ns, name string) {
		t.Helper()
		_, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{})
		mustNoErr(t, "create serviceaccount "+ns+"/"+name, err)
	}
	// The bootstrap "view" role is filled by the clusterrole aggregation
	// controller; a role of its own keeps this test to the API server.
	_, err := c.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create ClusterRole", err)
	c.createNamespace(t, "ci")
	c.createNamespace(t, "ops")
	sa("ci", "builder")
	sa("ops", "runner")
	subject := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	role := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"}
	_, err = c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "old-admin"},
		RoleRef: role, Subjects: []rbacv1.Subject{subject("ci", "builder"), subject("ops", "runner")}}, metav1.CreateOptions{})
	mustNoErr(t, "create ClusterRoleBinding", err)
	_, err = c.kube.RbacV1().RoleBindings("ops").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ci-reader", Namespace: "ops"},
		RoleRef: role, Subjects: []rbacv1.Subject{subject("ci", "builder")}}, metav1.CreateOptions{})
	mustNoErr(t, "create RoleBinding", err)
	crbKey, rbKey := "/registry/clusterrolebindings/old-admin", "/registry/rolebindings/ops/ci-reader"
	waitFor(t, 30*time.Second, "builder to hold the grant", func() error {
		if c.canIListPods(t, builder, "default") != "yes" {
			return errString("no")
		}
		return nil
	})
	c.forceDelete(t, "/registry/namespaces/ci")
	c.forceDelete(t, "/registry/serviceaccounts/ci/builder")

	t.Run("scan reports the subject in the gone namespace", func(t *testing.T) {
		rep, code := c.scanJSON(t)
		if code != 3 {
			t.Errorf("scan exit %d, want 3", code)
		}
		d := danglingRefOf(rep.Dangling, crbKey, "subjects[0]")
		if d == nil || d.State != etcdscan.DanglingGone || d.TargetNamespace != "ci" || d.SingleWitness || d.Kind != "ClusterRoleBinding" {
			t.Errorf("reference of %s subjects[0]: %+v, want gone into ci with two witnesses; dangling:\n%s", crbKey, d, describeRefs(rep.Dangling))
		}
		if d := danglingRefOf(rep.Dangling, crbKey, "subjects[1]"); d != nil {
			t.Errorf("scan reports the live subject ops/runner: %+v", *d)
		}
		if d := danglingRefOf(rep.Dangling, rbKey, "subjects[0]"); d == nil || d.State != etcdscan.DanglingGone || d.Kind != "RoleBinding" {
			t.Errorf("reference of %s subjects[0]: %+v, want gone; dangling:\n%s", rbKey, d, describeRefs(rep.Dangling))
		}
	})

	t.Run("the account created again holds the grant", func(t *testing.T) {
		c.createNamespace(t, "ci")
		sa("ci", "builder")
		if got := c.canIListPods(t, builder, "default"); got != "yes" {
			t.Errorf("can-i list pods as %s: %s, want yes (the grant came back)", builder, got)
		}
	})

	root := filepath.Join(t.TempDir(), "backups")
	t.Run("dangling --confirm removes the subject and the binding left without one", func(t *testing.T) {
		c.forceDelete(t, "/registry/namespaces/ci")
		c.forceDelete(t, "/registry/serviceaccounts/ci/builder")
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 {
			t.Fatalf("dangling --confirm: exit %d: %s\n%s", code, errOut, out)
		}
		crb, err := c.kube.RbacV1().ClusterRoleBindings().Get(ctx, "old-admin", metav1.GetOptions{})
		mustNoErr(t, "get old-admin", err)
		if len(crb.Subjects) != 1 || crb.Subjects[0] != subject("ops", "runner") {
			t.Errorf("old-admin subjects %+v, want only ops/runner", crb.Subjects)
		}
		if _, err := c.kube.RbacV1().RoleBindings("ops").Get(ctx, "ci-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ops/ci-reader after the fix: %v, want not found", err)
		}
		dir := onlyBackupDir(t, root)
		b, err := backup.ReadBackup(dir)
		mustNoErr(t, "read backup", err)
		rewritten, err := backup.Written(dir, backup.ActionDangling, etcdwrite.Rewritten)
		mustNoErr(t, "read the audit log", err)
		if e := backupEntry(b, crbKey); e == nil || rewritten[crbKey] == 0 {
			t.Errorf("backup entry of %s: %+v, want a key rewritten at a revision the audit log records", crbKey, e)
		}
		if e := backupEntry(b, rbKey); e == nil || rewritten[rbKey] != 0 {
			t.Errorf("backup entry of %s: %+v (rewritten at %d), want a deleted key", rbKey, e, rewritten[rbKey])
		}
	})

	t.Run("the account created again holds nothing", func(t *testing.T) {
		c.createNamespace(t, "ci")
		sa("ci", "builder")
		for _, ns := range []string{"default", "ops"} {
			waitFor(t, 30*time.Second, builder+" to lose the grant in "+ns, func() error {
				if got := c.canIListPods(t, builder, ns); got != "no" {
					return errString(got)
				}
				return nil
			})
		}
		if got := c.canIListPods(t, runner, "default"); got != "yes" {
			t.Errorf("can-i list pods as %s: %s, want yes (its subject is live)", runner, got)
		}
	})
}

// TestDanglingManagedAPIServiceIsRefused: an APIService a Helm release
// manages dangles. `dangling --confirm` refuses it, naming the release (the
// next helm upgrade would re-create it), and changes nothing; with
// --accept-managed it is deleted.
func TestDanglingManagedAPIServiceIsRefused(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	const apiName = "v1alpha1.acme.example.com"
	c.createNamespace(t, "cm-ns")
	c.createHeadlessService(t, "cm-ns", "cm-api")
	apiKey := c.createAggregatedAPI(t, "acme.example.com", "v1alpha1", "cm-ns", "cm-api",
		map[string]string{"meta.helm.sh/release-name": "cert-manager", "meta.helm.sh/release-namespace": "cm-ns"})
	c.forceDelete(t, "/registry/namespaces/cm-ns")
	c.forceDelete(t, "/registry/services/specs/cm-ns/cm-api")
	c.waitAPIServiceReason(t, apiName, "ServiceNotFound")

	t.Run("scan and the dry run name the Helm release", func(t *testing.T) {
		rep, _ := c.scanJSON(t)
		d := danglingRefOf(rep.Dangling, apiKey, "spec.service")
		if d == nil || d.State != etcdscan.DanglingGone || !strings.Contains(strings.Join(d.ManagedBy, "; "), "Helm release cert-manager") {
			t.Errorf("scan: reference of %s: %+v, want gone and managed by Helm release cert-manager", apiKey, d)
		}
		doc := c.danglingDryRun(t)
		if d := danglingRefOf(doc.References, apiKey, "spec.service"); d == nil {
			t.Errorf("dry run does not list %s; references:\n%s", apiKey, describeRefs(doc.References))
		}
	})

	t.Run("refused without --accept-managed", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "backups")
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--backup-dir", root)
		if code != 1 || !strings.Contains(out+errOut, "Helm release cert-manager") {
			t.Errorf("dangling --confirm: exit %d, want 1 with a refusal naming Helm release cert-manager: %s\n%s", code, errOut, out)
		}
		c.assertUnchanged(t, "a refused dangling --confirm", before)
		if c.value(t, apiKey) == nil {
			t.Errorf("%s was deleted", apiKey)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("a refused dangling --confirm wrote %s", root)
		}
	})

	t.Run("deleted with --accept-managed", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--accept-managed", "--backup-dir", root)
		if code != 0 {
			t.Fatalf("dangling --confirm --accept-managed: exit %d: %s\n%s", code, errOut, out)
		}
		if c.value(t, apiKey) != nil {
			t.Errorf("%s is still in etcd", apiKey)
		}
		if _, err := c.dyn.Resource(apiServiceGVR).Get(ctx, apiName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("APIService %s: %v, want not found", apiName, err)
		}
		backupHolding(t, root, apiKey)
	})
}

// TestDanglingServiceInAGhostNamespaceIsNotGone: a namespace's key was
// force-deleted while its Service and ServiceAccount stay stored, so the API
// server still serves them (a GET answers 200). A webhook configuration
// pointing at the Service and a ClusterRoleBinding whose subject is the
// account are no dangling references: scan and the dry run call their
// targets ghosts, never gone, and `dangling --confirm` changes neither
// (their fix is the purge of the ghost namespace) and writes no backup.
func TestDanglingServiceInAGhostNamespaceIsNotGone(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	const ns = "ghost-ns"
	c.createNamespace(t, ns)
	c.createHeadlessService(t, ns, "hook")
	_, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: ns}}, metav1.CreateOptions{})
	mustNoErr(t, "create serviceaccount", err)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	path, timeout := "/validate", int32(2)
	// It matches no namespace: it is never called while the test runs.
	_, err = c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost-guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "ghost.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "hook", Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"matches": "nothing"}}}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create ghost-guard", err)
	_, err = c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ghost-grant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "runner"}}}, metav1.CreateOptions{})
	mustNoErr(t, "create ghost-grant", err)
	c.forceDelete(t, "/registry/namespaces/"+ns)
	vwcKey, crbKey := "/registry/validatingwebhookconfigurations/ghost-guard", "/registry/clusterrolebindings/ghost-grant"
	hookField := "webhooks[ghost.example.com].clientConfig.service"

	// The case itself: the namespace is gone, its Service is still served.
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after its key was deleted: %v, want not found", ns, err)
	}
	if _, err := c.kube.CoreV1().Services(ns).Get(ctx, "hook", metav1.GetOptions{}); err != nil {
		t.Fatalf("service %s/hook is not served after its namespace's key was deleted: %v", ns, err)
	}
	if _, err := c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "runner", metav1.GetOptions{}); err != nil {
		t.Fatalf("serviceaccount %s/runner is not served after its namespace's key was deleted: %v", ns, err)
	}
	ghostsNotGone := func(t *testing.T, what string, refs []etcdscan.DanglingRef) {
		t.Helper()
		for _, at := range [][2]string{{vwcKey, hookField}, {crbKey, "subjects[0]"}} {
			d := danglingRefOf(refs, at[0], at[1])
			if d == nil || d.State != etcdscan.DanglingGhost || d.TargetNamespace != ns {
				t.Errorf("%s: reference of %s %s: %+v, want its target a ghost in %s (never gone); references:\n%s", what, at[0], at[1], d, ns, describeRefs(refs))
				continue
			}
			if !strings.Contains(d.Fix, "purge") || strings.Contains(d.Why, "does not exist") {
				t.Errorf("%s: %s %s: why %q, fix %q; want a stored target, left to the purge of %s", what, at[0], at[1], d.Why, d.Fix, ns)
			}
		}
	}

	t.Run("scan and the dry run call the targets ghosts, not gone", func(t *testing.T) {
		rep, _ := c.scanJSON(t)
		ghostsNotGone(t, "scan", rep.Dangling)
		if n := rep.DanglingGoneCount(); n != 0 {
			t.Errorf("scan counts %d gone references, want 0:\n%s", n, describeRefs(rep.Dangling))
		}
		ghostsNotGone(t, "dangling", c.danglingDryRun(t).References)
		ghostsNotGone(t, "dangling -n "+ns, c.danglingDryRun(t, "-n", ns).References)
	})

	t.Run("dangling --confirm touches neither the webhook configuration nor the binding", func(t *testing.T) {
		vwcBefore, crbBefore := c.value(t, vwcKey), c.value(t, crbKey)
		before := c.state(t)
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "dangling", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 {
			t.Errorf("dangling --confirm with only ghost targets: exit %d, want 0 (nothing to fix): %s\n%s", code, errOut, out)
		}
		c.assertUnchanged(t, "dangling --confirm with only ghost targets", before)
		if after := c.value(t, vwcKey); after == nil || string(after) != string(vwcBefore) {
			t.Errorf("dangling --confirm changed or deleted %s:\n%s", vwcKey, out)
		}
		if after := c.value(t, crbKey); after == nil || string(after) != string(crbBefore) {
			t.Errorf("dangling --confirm changed or deleted %s:\n%s", crbKey, out)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("dangling --confirm wrote a backup under %s with nothing to fix", root)
		}
	})
}
