package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (c *cluster) createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	mustNoErr(t, "create namespace "+name, err)
}

func (c *cluster) createPod(t *testing.T, ns, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	for _, m := range mutate {
		m(p)
	}
	p, err := c.kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	mustNoErr(t, "create pod "+ns+"/"+name, err)
	return p
}

func (c *cluster) createConfigMap(t *testing.T, ns, name string, mutate ...func(*corev1.ConfigMap)) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
	for _, m := range mutate {
		m(cm)
	}
	_, err := c.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	mustNoErr(t, "create configmap "+ns+"/"+name, err)
}

func (c *cluster) createSecret(t *testing.T, ns, name string) {
	t.Helper()
	_, err := c.kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
	mustNoErr(t, "create secret "+ns+"/"+name, err)
}

// createCRD creates a namespaced CRD <plural>.<group> and waits until it is served.
func (c *cluster) createCRD(t *testing.T, group, plural, kind string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": plural + "." + group},
		"spec": map[string]interface{}{
			"group": group, "scope": "Namespaced",
			"names": map[string]interface{}{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	_, err := c.dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	mustNoErr(t, "create CRD", err)
	waitFor(t, 60*time.Second, "CRD "+plural+"."+group+" served", func() error {
		_, err := c.kube.Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err
	})
	c.waitLocalAPIService(t, "v1."+group)
}

// waitLocalAPIService waits until kube-apiserver's own registration has
// written the APIService of a CRD's group version (name "v1.example.com")
// and marked it Available: it does so in the background after the CRD is
// served, and a keyspace read before that would see the write later as
// the test's.
func (c *cluster) waitLocalAPIService(t *testing.T, name string) {
	t.Helper()
	c.waitAPIServiceReason(t, name, "Local")
}

func (c *cluster) createCR(t *testing.T, group, plural, kind, ns, name string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": group + "/v1", "kind": kind, "metadata": map[string]interface{}{"name": name, "namespace": ns},
		"spec": map[string]interface{}{"size": int64(3)},
	}}
	waitFor(t, 30*time.Second, "create "+kind+" "+name, func() error {
		_, err := c.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), cr, metav1.CreateOptions{})
		return created(err)
	})
}

// forceDelete removes a key straight from etcd, as an engineer clearing a stuck object by hand would.
func (c *cluster) forceDelete(t *testing.T, key string) {
	t.Helper()
	// A delete compared on the key's mod revision, with a get when the
	// compare fails: the shape kine serves too. A controller may write the
	// key in between (the PV controller does): then it is read again.
	for attempt := 0; ; attempt++ {
		resp, err := c.etcd.Get(context.Background(), key)
		mustNoErr(t, "read "+key, err)
		if len(resp.Kvs) != 1 {
			t.Fatalf("delete %s: no such key", key)
		}
		txn, err := c.etcd.Txn(context.Background()).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
		mustNoErr(t, "delete "+key, err)
		if txn.Succeeded {
			break
		}
		if attempt == 20 {
			t.Fatalf("delete %s: written again at every one of %d attempts", key, attempt+1)
		}
	}
	if after, err := c.etcd.Get(context.Background(), key); err != nil || len(after.Kvs) != 0 {
		t.Fatalf("delete %s: still there (%v)", key, err)
	}
}

func (c *cluster) put(t *testing.T, key string, value []byte) {
	t.Helper()
	_, err := c.etcd.Put(context.Background(), key, string(value))
	mustNoErr(t, "put "+key, err)
}

func (c *cluster) value(t *testing.T, key string) []byte {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), key)
	mustNoErr(t, "get "+key, err)
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0].Value
}

func withFinalizer(f string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, f) }
}

func withOwner(kind, name string, uid types.UID) func(*corev1.ConfigMap) {
	return func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid})
	}
}

// scanJSON runs `regghost scan -o json` and decodes the report.
func (c *cluster) scanJSON(t *testing.T, args ...string) (*etcdscan.Report, int) {
	t.Helper()
	out, errOut, code := c.regghost(t, "", append([]string{"scan", "-o", "json"}, args...)...)
	if code != 0 && code != 3 {
		t.Fatalf("scan exited %d: %s", code, errOut)
	}
	var rep etcdscan.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("scan output is not JSON: %v\n%s", err, out)
	}
	return &rep, code
}

// classesByKey maps each finding's key to its classes.
func classesByKey(rep *etcdscan.Report) map[string][]etcdscan.Class {
	m := map[string][]etcdscan.Class{}
	for _, f := range rep.Findings {
		m[f.Key] = f.Classes
	}
	return m
}

func decodeReport(t *testing.T, out string) *etcdscan.Report {
	t.Helper()
	var rep etcdscan.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not a JSON report: %v\n%s", err, out)
	}
	return &rep
}

func clientPrefix() clientv3.OpOption { return clientv3.WithPrefix() }

// boundDeleteClaim creates claim ns/name on the hostPath provisioner's
// StorageClass (reclaim policy Delete; created once), waits until the PV
// controller binds it, and returns its PersistentVolume. The namespace must
// exist and kube-controller-manager run the persistentvolume-binder.
func (c *cluster) boundDeleteClaim(t *testing.T, ns, name string) *corev1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	del, immediate := corev1.PersistentVolumeReclaimDelete, storagev1.VolumeBindingImmediate
	_, err := c.kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "hostpath"},
		Provisioner: "kubernetes.io/host-path", ReclaimPolicy: &del, VolumeBindingMode: &immediate}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create StorageClass: %v", err)
	}
	class := "hostpath"
	_, err = c.kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create PVC", err)
	var pvName string
	waitFor(t, 60*time.Second, "the claim to be bound", func() error {
		pvc, err := c.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return errString("claim is " + string(pvc.Status.Phase))
		}
		pvName = pvc.Spec.VolumeName
		return nil
	})
	pv, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	mustNoErr(t, "get PV", err)
	return pv
}

// startSlowPurge starts `regghost purge ARGS --confirm --yes`, one key per
// transaction and one transaction a second, its backups under root, and
// returns once its first delete is in the audit log: a purge caught in the
// middle, to interrupt, kill or take a member from. Its output is held to
// checkWidth once the caller has waited for it.
func (c *cluster) startSlowPurge(t *testing.T, root string, args ...string) (cmd *exec.Cmd, out, errOut *bytes.Buffer) {
	t.Helper()
	full := append(append([]string{"purge"}, args...), "--confirm", "--yes", "--rate", "1", "--batch-size", "1", "--backup-dir", root, "--kubeconfig", c.kubeconfig)
	cmd = exec.Command(bins.regghost, append(full, c.etcdArgs()...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	mustNoErr(t, "start purge", cmd.Start())
	// What it printed, once the test has waited for it, is held to the
	// width every other run is.
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // the test ended before waiting for it
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return
		}
		checkWidth(t, full, true, cmd.ProcessState.ExitCode(), out.String(), errOut.String())
	})
	waitFor(t, 60*time.Second, "the first delete", func() error {
		logs, _ := filepath.Glob(filepath.Join(root, "*", backup.AuditFile))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(`"outcome":"deleted"`)) {
				return nil
			}
		}
		return errString("no delete yet")
	})
	return cmd, out, errOut
}

// created is a create's error in a loop that tries again until the API
// serves the resource: AlreadyExists is success, since an earlier try
// whose answer was an error (etcd's timeout under load) may have been
// applied.
func created(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
