package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// plantGhosts reproduces a stuck-namespace incident through the API and
// etcd, and returns every key scan must report with its classes:
//
//   - kb-system has pods, a configmap, a secret and a Widget; its namespace
//     key is then force-deleted, stranding them all.
//   - the Widget CRD key is force-deleted too, leaving its custom resources.
//   - "mixed" exists and holds a corrupt value, a value copied under the wrong
//     name, a value with a stale encryption prefix, a pod stuck Terminating on a
//     finalizer and a configmap whose owner never existed.
//   - "healthy" (pods, configmaps, a Gadget of a CRD that stays) must not appear.
func plantGhosts(t *testing.T, c *cluster) map[string][]etcdscan.Class {
	t.Helper()
	for _, ns := range []string{"kb-system", "healthy", "mixed"} {
		c.createNamespace(t, ns)
	}
	c.createCRD(t, "example.com", "widgets", "Widget")
	c.createCRD(t, "example.com", "gadgets", "Gadget")

	c.createPod(t, "kb-system", "p1")
	c.createPod(t, "kb-system", "p2")
	c.createConfigMap(t, "kb-system", "cm1")
	c.createSecret(t, "kb-system", "s1")
	c.createCR(t, "example.com", "widgets", "Widget", "kb-system", "w1")

	c.createPod(t, "healthy", "web")
	c.createConfigMap(t, "healthy", "settings")
	c.createSecret(t, "healthy", "token")
	c.createCR(t, "example.com", "gadgets", "Gadget", "healthy", "g1")
	// A namespace whose name extends kb-system: a prefix without its
	// trailing slash would wrongly include it.
	c.createNamespace(t, "kb-system2")
	c.createPod(t, "kb-system2", "p1")

	c.createPod(t, "mixed", "stuck", withFinalizer("example.com/never-removed"))
	mustNoErr(t, "delete stuck pod", c.kube.CoreV1().Pods("mixed").Delete(context.Background(), "stuck", metav1.DeleteOptions{}))
	c.createConfigMap(t, "mixed", "owned", withOwner("ReplicaSet", "gone", "6f1f2c4e-1d7a-4d0c-9a0e-0c9b1f7c2a55"))
	c.createConfigMap(t, "mixed", "original")
	c.put(t, "/registry/configmaps/mixed/copy", c.value(t, "/registry/configmaps/mixed/original"))
	c.put(t, "/registry/configmaps/mixed/broken", []byte("k8s\x00\x0a\x02v1\x12\x09Config"))
	c.put(t, "/registry/secrets/mixed/rotated", []byte("k8s:enc:aescbc:v1:retired-key:\x8a\x11\xfe\x02garbage"))

	c.forceDelete(t, "/registry/namespaces/kb-system")
	c.forceDelete(t, "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com")
	waitFor(t, 30*time.Second, "widgets no longer served", func() error {
		if _, err := c.kube.Discovery().ServerResourcesForGroupVersion("example.com/v1"); err != nil {
			return err
		}
		rl, _ := c.kube.Discovery().ServerResourcesForGroupVersion("example.com/v1")
		for _, r := range rl.APIResources {
			if r.Name == "widgets" {
				return errString("widgets still served")
			}
		}
		return nil
	})

	orphan := []etcdscan.Class{etcdscan.ClassOrphanedNamespace}
	return map[string][]etcdscan.Class{
		"/registry/pods/kb-system/p1":                {etcdscan.ClassOrphanedNamespace},
		"/registry/pods/kb-system/p2":                orphan,
		"/registry/configmaps/kb-system/cm1":         orphan,
		"/registry/secrets/kb-system/s1":             orphan,
		"/registry/example.com/widgets/kb-system/w1": {etcdscan.ClassUnservedType, etcdscan.ClassOrphanedNamespace},
		"/registry/configmaps/mixed/copy":            {etcdscan.ClassKeyMismatch},
		"/registry/configmaps/mixed/broken":          {etcdscan.ClassUndecodable},
		"/registry/secrets/mixed/rotated":            {etcdscan.ClassEncryptedUnknown},
		"/registry/pods/mixed/stuck":                 {etcdscan.ClassStuckTerminating},
		"/registry/configmaps/mixed/owned":           {etcdscan.ClassDanglingOwner},
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// filter keeps the expected keys whose namespace segment is ns.
func filterNamespace(want map[string][]etcdscan.Class, ns string) map[string][]etcdscan.Class {
	out := map[string][]etcdscan.Class{}
	for key, v := range want {
		k, _ := etcdscan.ParseKey("/registry/", key)
		if k.Namespace == ns {
			out[key] = v
		}
	}
	return out
}
