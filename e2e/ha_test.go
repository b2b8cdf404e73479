package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestHAControlPlaneStaleEncryptionConfig runs two real kube-apiservers on
// one etcd, as an HA control plane whose second member kept an old
// encryption config. Asked through the stale one, "the API server cannot
// decrypt it" is no proof: the other reads the value. encrypted-unknown is a
// two-witness ghost only when every kube-apiserver (the endpoints of the
// default/kubernetes Service) fails to read it.
func TestHAControlPlaneStaleEncryptionConfig(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	current := filepath.Join(dir, "current.yaml")
	mustNoErr(t, "write", os.WriteFile(current, []byte(encryptionConfig), 0o600))
	stale := filepath.Join(dir, "stale.yaml")
	mustNoErr(t, "write", os.WriteFile(stale, []byte(staleEncryption), 0o600))
	port := freePort(t)
	a := startCluster(t, clusterOptions{apiserverIP: "127.0.0.2", apiserverPort: port, apiserverName: "apiserver-a",
		apiserverArgs: []string{"--encryption-provider-config", current}})
	b := *a
	// Its Secrets cache cannot fill (the Secrets every cluster holds are
	// under a key it lacks), so it never reports ready: live is enough.
	b.startAPIServer(t, clusterOptions{apiserverIP: "127.0.0.3", apiserverPort: port, apiserverName: "apiserver-b", live: true,
		apiserverArgs: []string{"--encryption-provider-config", stale}})

	// Each kube-apiserver's endpoint reconciler registers its address in
	// the kubernetes Service; validation refuses loopback addresses there,
	// so this test writes the slice the reconcilers would have written.
	https, ready := "https", true
	p := int32(port)
	a.put(t, "/registry/endpointslices/default/kubernetes", []byte(etcdtest.Encode(t, &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", UID: "5d0f6a2e-8d0e-4d55-9a43-0b7f2f1f2a01", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"127.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Name: &https, Port: &p}},
	})))

	a.createNamespace(t, "app")
	a.createSecret(t, "app", "db") // written by a: encrypted with key1
	// A value no kube-apiserver holds the key of.
	a.put(t, "/registry/secrets/app/lost", []byte("k8s:enc:aescbc:v1:key9:\x8c\x11not-a-ciphertext-anyone-can-read-0123456789abcdef"))

	rep, _ := b.scanJSON(t, "--encryption-provider-config", stale, "--namespace", "app")
	assertFindings(t, rep, map[string][]etcdscan.Class{
		"/registry/secrets/app/db":   {etcdscan.ClassDisputed},
		"/registry/secrets/app/lost": {etcdscan.ClassEncryptedUnknown},
	})
	contradicted := false
	for _, f := range rep.Findings {
		for _, e := range f.Evidence {
			contradicted = contradicted || (f.Key == "/registry/secrets/app/db" && e.Answer == etcdscan.Contradicts &&
				strings.Contains(e.Said, "kube-apiserver https://127.0.0.2:") && strings.Contains(e.Said, "reads it"))
		}
	}
	if !contradicted {
		t.Errorf("no evidence that kube-apiserver 127.0.0.2 reads /registry/secrets/app/db")
	}
	assertEvidence(t, rep, "/registry/secrets/app/lost", etcdscan.ClassEncryptedUnknown, "every kube-apiserver fails to decrypt it")
	for _, f := range rep.Findings {
		if f.Key == "/registry/secrets/app/lost" && (!f.Ghost || f.SingleWitness) {
			t.Errorf("lost: ghost=%v singleWitness=%v, want a two-witness ghost", f.Ghost, f.SingleWitness)
		}
	}

	// purge, asked through the stale kube-apiserver, plans only the value
	// nobody can read.
	out, errOut, code := b.regghost(t, "", "purge", "-n", "app", "--encryption-provider-config", stale, "-o", "name")
	if code != 0 || strings.TrimSpace(out) != "/registry/secrets/app/lost" {
		t.Errorf("purge dry run through the stale kube-apiserver: exit %d, planned %q (%s)", code, out, errOut)
	}
}
