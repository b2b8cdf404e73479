package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/pkg/impact"
)

// pvEncryption encrypts PersistentVolumes (and Secrets) at rest, as an
// EncryptionConfiguration may for any resource.
const pvEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [persistentvolumes, secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ=
      - identity: {}
`

// TestDecisionsReadWhatTheyNeed checks the rule "a decision that needs an
// object's content reads it, or refuses with the reason" on a real cluster
// whose PersistentVolumes are encrypted at rest, with the PV controller, the
// garbage collector and the namespace controller running:
//   - a ghost claim on an encrypted Delete volume: the volume is read
//     through the API server (or the local config) and the purge refused;
//     with nobody to read it, the effect is unknown and refused; the data
//     survives;
//   - an undecodable custom resource that owns a ConfigMap: the dependent is
//     found by the kind its CRD key names, and the purge refused (the
//     garbage collector would delete it once the owner's 500 becomes a 404);
//   - a Service held by the cloud load balancer's finalizer in a stuck
//     namespace: unstick does not strip it without --accept-impact.
//
// The undecodable custom resource comes last: while it is stored, every
// LIST of its type fails, and so does every namespace deletion.
func TestDecisionsReadWhatTheyNeed(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	enc := filepath.Join(dir, "encryption.yaml")
	mustNoErr(t, "write", os.WriteFile(enc, []byte(pvEncryption), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", enc}})
	c.startControllerManager(t, "persistentvolume-binder-controller", "garbage-collector-controller", "namespace-controller")
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "backups")

	t.Run("a claim on an encrypted Delete volume", func(t *testing.T) {
		c.createNamespace(t, "vault")
		pv := c.boundDeleteClaim(t, "vault", "data")
		pvName := pv.Name
		if v := c.value(t, "/registry/persistentvolumes/"+pvName); !strings.HasPrefix(string(v), "k8s:enc:aescbc:v1:key1:") {
			t.Fatalf("the PV is not encrypted at rest: %.40q", v)
		}
		precious := filepath.Join(pv.Spec.HostPath.Path, "precious.db")
		t.Cleanup(func() { os.RemoveAll(pv.Spec.HostPath.Path) })
		mustNoErr(t, "write data", os.WriteFile(precious, []byte("the only copy"), 0o600))
		c.forceDelete(t, "/registry/namespaces/vault")
		pvcKey := "/registry/persistentvolumeclaims/vault/data"

		for _, tt := range []struct {
			name string
			args []string
			kind impact.Kind
			says string
		}{
			{"read through the API server", nil, impact.StorageDestroyed, "releases PV " + pvName + " (reclaim policy Delete) and deletes its storage"},
			{"read with the local encryption config", []string{"--no-api", "--encryption-provider-config", enc, repairAcceptSingle}, impact.StorageDestroyed, "deletes its storage"},
			{"read by nobody", []string{"--no-api", repairAcceptSingle}, impact.Unknown, "PersistentVolumes cannot be read here"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"purge", "-n", "vault", "-o", "json"}, tt.args...)
				out, errOut, code := c.regghost(t, "", args...)
				if code != 0 {
					t.Fatalf("dry run: exit %d: %s", code, errOut)
				}
				var plan struct {
					Impact impact.Report `json:"impact"`
				}
				mustNoErr(t, "decode plan", json.Unmarshal([]byte(out), &plan))
				e := plan.Impact.Effects[pvcKey]
				if !hasEffect(e, tt.kind) || !strings.Contains(effectSummaries(e), tt.says) {
					t.Errorf("effects of %s: %+v, want %s saying %q", pvcKey, e, tt.kind, tt.says)
				}
				before := c.state(t)
				_, errOut, code = c.regghost(t, "", append([]string{"purge", "-n", "vault", "--confirm", "--yes", "--backup-dir", root}, tt.args...)...)
				if code != 1 || !strings.Contains(errOut, pvcKey) {
					t.Errorf("purge --confirm: exit %d, want a refusal naming %s: %s", code, pvcKey, errOut)
				}
				c.assertUnchanged(t, "a refused purge", before)
			})
		}
		time.Sleep(3 * time.Second) // the PV controller's resync would have acted
		if b, err := os.ReadFile(precious); err != nil || string(b) != "the only copy" {
			t.Errorf("the volume's data: %q, %v", b, err)
		}
	})

	t.Run("unstick keeps the cloud load balancer's finalizer", func(t *testing.T) {
		c.createNamespace(t, "edge")
		_, err := c.kube.CoreV1().Services("edge").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "edge", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		mustNoErr(t, "create Service", err)
		mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "edge", metav1.DeleteOptions{}))
		waitFor(t, 60*time.Second, "the Service to be terminating", func() error {
			s, err := c.kube.CoreV1().Services("edge").Get(ctx, "front", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.DeletionTimestamp == nil {
				return errString("not terminating yet")
			}
			return nil
		})
		// The namespace controller keeps writing the namespace's status:
		// the refusal is checked on the Service, which only unstick writes.
		svcKey := "/registry/services/specs/edge/front"
		before := c.value(t, svcKey)
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "edge", "--confirm", "--yes", "--backup-dir", root)
		if code == 0 || !strings.Contains(errOut+out, impact.AcceptImpactFlag+" "+string(impact.LoadBalancerLeaked)) {
			t.Errorf("unstick without the accept: exit %d: %s\n%s", code, errOut, out)
		}
		if after := c.value(t, svcKey); string(after) != string(before) {
			t.Errorf("a refused unstick changed %s", svcKey)
		}
		out, errOut, code = c.regghost(t, "", "unstick", "namespace", "edge", "--confirm", "--yes", "--backup-dir", root,
			impact.AcceptImpactFlag, string(impact.LoadBalancerLeaked))
		if code != 0 || !strings.Contains(out, "namespace edge is gone") {
			t.Errorf("unstick with the accept: exit %d: %s\n%s", code, errOut, out)
		}
	})

	t.Run("an undecodable custom resource owns a ConfigMap", func(t *testing.T) {
		c.createCRD(t, "example.com", "widgets", "Widget")
		c.createNamespace(t, "shop")
		c.put(t, "/registry/example.com/widgets/shop/w1", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"`))
		c.createConfigMap(t, "shop", "orders", func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w1", UID: types.UID("7e1d2c3b-4a59-4c6d-8e7f-0a1b2c3d4e5f")}}
		})
		wKey, depKey := "/registry/example.com/widgets/shop/w1", "/registry/configmaps/shop/orders"
		out, errOut, code := c.regghost(t, "", "purge", "-n", "shop", "-o", "json")
		if code != 0 {
			t.Fatalf("dry run: exit %d: %s", code, errOut)
		}
		var plan struct {
			Impact impact.Report `json:"impact"`
		}
		mustNoErr(t, "decode plan", json.Unmarshal([]byte(out), &plan))
		if e := plan.Impact.Effects[wKey]; !hasEffect(e, impact.DependentsDeleted) || !strings.Contains(effectSummaries(e), depKey) {
			t.Errorf("effects of %s: %+v, want dependents-deleted naming %s", wKey, e, depKey)
		}
		before := c.state(t)
		_, errOut, code = c.regghost(t, "", "purge", "-n", "shop", "--confirm", "--yes", "--backup-dir", root)
		if code != 1 || !strings.Contains(errOut, wKey) {
			t.Errorf("purge --confirm: exit %d, want a refusal naming %s: %s", code, wKey, errOut)
		}
		c.assertUnchanged(t, "a refused purge", before)
		time.Sleep(2 * time.Second) // the garbage collector keeps a dependent whose owner answers 500
		if c.value(t, depKey) == nil {
			t.Errorf("%s is gone", depKey)
		}
	})
}

// repairAcceptSingle lets a dry run without the API server plan
// single-witness ghosts, so their effects are worked out.
const repairAcceptSingle = "--accept-single-witness"

func effectSummaries(effects []impact.Effect) string {
	var s []string
	for _, e := range effects {
		s = append(s, e.Summary)
	}
	return strings.Join(s, " | ")
}
