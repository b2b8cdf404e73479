package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kmsv2 "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/flagnames"
)

// clusterEncryption encrypts Secrets with aescbc key1 and can also read
// values of a KMS v2 plugin named "gone" whose socket does not exist.
const clusterEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ=
      - kms:
          apiVersion: v2
          name: gone
          endpoint: unix://SOCKET
          timeout: 1s
      - identity: {}
`

// staleEncryption is an operator's old copy: key1 has since been rotated in.
const staleEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key0
              secret: b2xkIGtleSBvbGQga2V5IG9sZCBrZXkgb2xkIGtleSE=
      - identity: {}
`

// kmsValue is a well-formed KMS v2 envelope, as a kube-apiserver with the
// plugin "gone" would have written it.
func kmsValue(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&kmsv2.EncryptedObject{EncryptedData: []byte("ciphertext"), KeyID: "key-1",
		EncryptedDEKSource: []byte("encrypted-dek"), EncryptedDEKSourceType: kmsv2.EncryptedDEKSourceType_AES_GCM_KEY})
	mustNoErr(t, "marshal kms envelope", err)
	return append([]byte("k8s:enc:kms:v2:gone:"), b...)
}

var (
	apiServiceGVR     = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	leaseCandidateGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates"}
)

// TestLiveObjectsAreNeverGhosts plants, on one real cluster, every way a
// live or recoverable object can look like a ghost to a reader of etcd: a
// Secret readable by the API server but not by a stale local encryption
// config, a KMS-encrypted Secret while the KMS plugin is down (a 500 that
// means "unavailable"), an object of a beta API turned on with
// --runtime-config, an aggregated API group whose discovery fails, and a CRD
// that exists but is not served. None may be a ghost; purge plans none;
// without the API server the verdicts are single-witness and purge refuses.
func TestLiveObjectsAreNeverGhosts(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	encPath := filepath.Join(dir, "encryption.yaml")
	mustNoErr(t, "write", os.WriteFile(encPath, []byte(strings.Replace(clusterEncryption, "SOCKET", filepath.Join(dir, "kms.sock"), 1)), 0o600))
	stalePath := filepath.Join(dir, "stale.yaml")
	mustNoErr(t, "write", os.WriteFile(stalePath, []byte(staleEncryption), 0o600))
	c := startCluster(t, clusterOptions{live: true, apiserverArgs: []string{
		"--encryption-provider-config", encPath,
		"--runtime-config", "coordination.k8s.io/v1beta1=true", "--feature-gates", "CoordinatedLeaderElection=true"}})
	ctx := context.Background()

	c.createNamespace(t, "app")
	c.createSecret(t, "app", "db")
	c.put(t, "/registry/secrets/app/vault-token", kmsValue(t))
	lc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
		"metadata": map[string]interface{}{"name": "candidate", "namespace": "app"},
		"spec":     map[string]interface{}{"leaseName": "lease", "binaryVersion": "1.37.2", "emulationVersion": "1.37.2", "strategy": "OldestEmulationVersion"},
	}}
	waitFor(t, 30*time.Second, "create a LeaseCandidate", func() error {
		_, err := c.dyn.Resource(leaseCandidateGVR).Namespace("app").Create(ctx, lc, metav1.CreateOptions{})
		return err
	})
	// An aggregated API whose service does not exist: its discovery fails.
	_, err := c.dyn.Resource(apiServiceGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]interface{}{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]interface{}{"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"insecureSkipTLSVerify": true, "service": map[string]interface{}{"namespace": "kube-system", "name": "metrics-server"}},
	}}, metav1.CreateOptions{})
	mustNoErr(t, "create APIService", err)
	c.put(t, "/registry/metrics.k8s.io/nodemetrics/app/n1", []byte(`{"apiVersion":"metrics.k8s.io/v1beta1","kind":"NodeMetrics","metadata":{"name":"n1","namespace":"app"}}`))
	// A CRD that exists but is not served: its kind clashes with another's.
	c.createCRD(t, "example.com", "gadgets", "Gadget")
	_, err = c.dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]interface{}{"name": "gizmos.example.com"},
		"spec": map[string]interface{}{"group": "example.com", "scope": "Namespaced",
			"names": map[string]interface{}{"plural": "gizmos", "singular": "gizmo", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}, metav1.CreateOptions{})
	mustNoErr(t, "create CRD gizmos", err)
	c.put(t, "/registry/example.com/gizmos/app/g1", []byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"app","uid":"0b7c5f55-7a57-4fd4-9d0f-1f0e8f3b2a11"}}`))
	// One real ghost, so the checks that still work are seen working.
	c.createNamespace(t, "gone")
	c.createConfigMap(t, "gone", "cm")
	c.forceDelete(t, "/registry/namespaces/gone")
	waitFor(t, 30*time.Second, "metrics.k8s.io discovery to fail", func() error {
		_, err := c.kube.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
		if err == nil {
			return errString("metrics.k8s.io/v1beta1 discovered")
		}
		return nil
	})

	ghost := map[string][]etcdscan.Class{"/registry/configmaps/gone/cm": {etcdscan.ClassOrphanedNamespace}}
	online := map[string][]etcdscan.Class{
		"/registry/configmaps/gone/cm":        {etcdscan.ClassOrphanedNamespace},
		"/registry/example.com/gizmos/app/g1": {etcdscan.ClassUnservedNow},
	}
	t.Run("with the API server", func(t *testing.T) {
		rep, _ := c.scanJSON(t)
		assertFindings(t, rep, online)
		assertEvidence(t, rep, "/registry/configmaps/gone/cm", etcdscan.ClassOrphanedNamespace, "404 NotFound")
		checks := checksByName(rep)
		if ch := checks["served types"]; ch.Done || !strings.Contains(ch.Note, "metrics.k8s.io") {
			t.Errorf("served types check with a failed discovery group: %+v", ch)
		}
		if ch := checks["api server witness"]; ch.Done || !strings.Contains(ch.Note, "KMS plugin may be down") {
			t.Errorf("api server witness check with a KMS plugin down: %+v", ch)
		}
	})
	t.Run("a stale local encryption config against the API server", func(t *testing.T) {
		rep, _ := c.scanJSON(t, "--encryption-provider-config", stalePath, "--namespace", "app")
		want := map[string][]etcdscan.Class{"/registry/secrets/app/db": {etcdscan.ClassDisputed}, "/registry/example.com/gizmos/app/g1": {etcdscan.ClassUnservedNow}}
		assertFindings(t, rep, want)
		for _, f := range rep.Findings {
			if f.Key == "/registry/secrets/app/db" && (f.Ghost || !strings.Contains(f.Reason(), "local --encryption-provider-config is stale")) {
				t.Errorf("stale config verdict: ghost %v: %s", f.Ghost, f.Reason())
			}
		}
	})
	t.Run("purge plans none of them", func(t *testing.T) {
		for _, args := range [][]string{{"purge", "-n", "app"}, {"purge", "-n", "app", "--encryption-provider-config", stalePath}} {
			out, errOut, code := c.regghost(t, "", args...)
			if code != 0 || !strings.Contains(out, "No ghost to purge") {
				t.Errorf("%v: exit %d: %s\n%s", args, code, errOut, out)
			}
		}
	})
	t.Run("without the API server", func(t *testing.T) {
		offline := func(args ...string) *etcdscan.Report {
			out, errOut, code := runBinary(t, "", append(append([]string{"scan", "-o", "json", "--no-api"}, args...), c.etcdArgs()...)...)
			if code != 0 && code != 3 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			return decodeReport(t, out)
		}
		rep := offline()
		assertFindings(t, rep, ghost)
		for _, f := range rep.Findings {
			if !f.SingleWitness {
				t.Errorf("%s: not marked single-witness without the API server", f.Key)
			}
		}
		rep = offline("--encryption-provider-config", stalePath, "-n", "app")
		assertFindings(t, rep, map[string][]etcdscan.Class{"/registry/secrets/app/db": {etcdscan.ClassEncryptedUnknown}})
		for _, f := range rep.Findings {
			if !f.Ghost || !f.SingleWitness {
				t.Errorf("%s: ghost %v single %v", f.Key, f.Ghost, f.SingleWitness)
			}
		}
		root := filepath.Join(t.TempDir(), "backups")
		args := append([]string{"purge", "-n", "app", "--no-api", "--encryption-provider-config", stalePath, "--backup-dir", root}, c.etcdArgs()...)
		out, errOut, code := runBinary(t, "", args...)
		if code != 0 || !strings.Contains(out, "single") || !strings.Contains(out, flagnames.AcceptSingleWitness) {
			t.Errorf("dry run does not say which keys need %s: exit %d: %s\n%s", flagnames.AcceptSingleWitness, code, errOut, out)
		}
		before := c.state(t)
		out, errOut, code = runBinary(t, "", append(args, "--confirm", "--yes")...)
		if code != 1 || !strings.Contains(errOut, flagnames.AcceptSingleWitness) || strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n") > 0 {
			t.Errorf("purge of a single-witness verdict: exit %d: %s\n%s", code, errOut, out)
		}
		c.assertUnchanged(t, "a refused purge", before)
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("refused purge created %s", root)
		}
		if _, err := c.kube.CoreV1().Secrets("app").Get(ctx, "db", metav1.GetOptions{}); err != nil {
			t.Errorf("the Secret is gone: %v", err)
		}
	})
}

// TestPartialKeyspaceIsNotJudged: with events kept in their own etcd
// (--etcd-servers-overrides), that etcd holds no namespaces; none of its
// events is an orphan. And objects of an API turned off are no ghosts.
func TestPartialKeyspaceIsNotJudged(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{eventsEtcd: true})
	ctx := context.Background()
	c.createNamespace(t, "app")
	_, err := c.kube.CoreV1().Events("app").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "app"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "p"}, Reason: "Test", Message: "m"}, metav1.CreateOptions{})
	mustNoErr(t, "create event", err)
	if resp, err := c.eventsEtcd.Get(ctx, "/registry/events/app/e1"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the event is not in the events etcd: %v", err)
	}
	events := []string{"--endpoints", c.eventsURL, "--cacert", c.pki.CA, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey}
	for _, api := range [][]string{{"--kubeconfig", c.kubeconfig}, {"--no-api"}} {
		out, errOut, code := runBinary(t, "", append(append([]string{"scan", "-o", "json"}, api...), events...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", api, code, errOut)
		}
		rep := decodeReport(t, out)
		assertFindings(t, rep, nil)
		if ch := checksByName(rep)["namespaces"]; ch.Done || !strings.Contains(ch.Note, "does not hold the cluster's namespaces") {
			t.Errorf("%v: namespaces check: %+v", api, ch)
		}
		out, errOut, code = runBinary(t, "", append(append([]string{"purge", "-n", "app"}, api...), events...)...)
		if code != 0 || !strings.Contains(out, "No ghost to purge") {
			t.Errorf("%v: purge dry run on the events etcd: exit %d: %s\n%s", api, code, errOut, out)
		}
	}
	// An API compiled in but off (a stock kube-apiserver does not serve
	// coordination.k8s.io/v1beta1): its stored objects are recoverable.
	c.put(t, "/registry/leasecandidates/app/lc", []byte(`{"apiVersion":"coordination.k8s.io/v1beta1","kind":"LeaseCandidate","metadata":{"name":"lc","namespace":"app","uid":"5d0f3c52-6f1e-4d1c-8a53-2f4c1b9e7a10"}}`))
	rep, _ := c.scanJSON(t)
	assertFindings(t, rep, map[string][]etcdscan.Class{"/registry/leasecandidates/app/lc": {etcdscan.ClassUnservedNow}})
	out, errOut, code := runBinary(t, "", append([]string{"scan", "-o", "json", "--no-api"}, c.etcdArgs()...)...)
	if code != 0 {
		t.Fatalf("offline scan: exit %d: %s", code, errOut)
	}
	assertFindings(t, decodeReport(t, out), nil)
}

func checksByName(rep *etcdscan.Report) map[string]etcdscan.Check {
	m := map[string]etcdscan.Check{}
	for _, ch := range rep.Checks {
		m[ch.Name] = ch
	}
	return m
}

// TestCorruptValuesWithoutTheUnsafeDeleteGate: with the
// AllowUnsafeMalformedObjectDeletion gate off (as before 1.37, or turned
// off), kube-apiserver reports corrupt values in other words; they are
// still evidence, and a healthy object is still read.
func TestCorruptValuesWithoutTheUnsafeDeleteGate(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--feature-gates", "AllowUnsafeMalformedObjectDeletion=false"}})
	c.createNamespace(t, "mixed")
	c.createConfigMap(t, "mixed", "fine")
	c.put(t, "/registry/configmaps/mixed/broken", []byte("k8s\x00\x0a\x02v1\x12\x09Config"))
	c.put(t, "/registry/secrets/mixed/rotated", []byte("k8s:enc:aescbc:v1:retired-key:\x8a\x11\xfe\x02garbage"))
	rep, _ := c.scanJSON(t, "-n", "mixed")
	assertFindings(t, rep, map[string][]etcdscan.Class{
		"/registry/configmaps/mixed/broken": {etcdscan.ClassUndecodable},
		"/registry/secrets/mixed/rotated":   {etcdscan.ClassEncryptedUnknown},
	})
	assertEvidence(t, rep, "/registry/configmaps/mixed/broken", etcdscan.ClassUndecodable, "proto")
	assertEvidence(t, rep, "/registry/secrets/mixed/rotated", etcdscan.ClassEncryptedUnknown, "identity transformer tried to read encrypted data")
}

// TestAPIServerOfAnotherClusterIsNoWitness: a kubeconfig pointing at the
// wrong cluster would answer 404 for every namespace of this one. Its
// kube-system UID differs from this etcd's, so it is not asked, the verdicts
// are single-witness and purge refuses them.
func TestAPIServerOfAnotherClusterIsNoWitness(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	other := startCluster(t, clusterOptions{})
	c.createNamespace(t, "gone")
	c.createConfigMap(t, "gone", "cm")
	c.forceDelete(t, "/registry/namespaces/gone")
	wrong := append([]string{"--kubeconfig", other.kubeconfig}, c.etcdArgs()...)
	out, errOut, code := runBinary(t, "", append([]string{"scan", "-o", "json"}, wrong...)...)
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := decodeReport(t, out)
	assertFindings(t, rep, map[string][]etcdscan.Class{"/registry/configmaps/gone/cm": {etcdscan.ClassOrphanedNamespace}})
	if f := rep.Findings[0]; !f.SingleWitness {
		t.Errorf("another cluster's API server was taken as a witness: %+v", f.Evidence)
	}
	if ch := checksByName(rep)["api server witness"]; ch.Done || !strings.Contains(ch.Note, "belongs to another cluster") {
		t.Errorf("api server witness check: %+v", ch)
	}
	_, errOut, code = runBinary(t, "", append([]string{"purge", "-n", "gone", "--confirm", "--yes", "--backup-dir", t.TempDir()}, wrong...)...)
	if code != 1 || !strings.Contains(errOut, flagnames.AcceptSingleWitness) {
		t.Errorf("purge with another cluster's API server: exit %d: %s", code, errOut)
	}
	if c.value(t, "/registry/configmaps/gone/cm") == nil {
		t.Error("the configmap was deleted")
	}
}
