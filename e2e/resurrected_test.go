package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestResurrectedObjects plays the incident: kb-system is deleted while the
// controllers are down, force-finalized through the finalize subresource,
// and created again; the old ReplicaSet comes back to life and the real
// ReplicaSet controller creates a Pod from it. Every old object and that
// Pod are resurrected; the new namespace's own objects are not.
func TestResurrectedObjects(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	c.createNamespace(t, "kb-system")
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	two, yes := int32(2), true
	dep, err := c.kube.AppsV1().Deployments("kb-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	mustNoErr(t, "create deployment", err)
	rs, err := c.kube.AppsV1().ReplicaSets("kb-system").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: dep.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	mustNoErr(t, "create replicaset", err)
	c.createPod(t, "kb-system", "web-1-old", func(p *corev1.Pod) {
		p.Labels = labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: rs.UID, Controller: &yes}}
	})
	c.createSecret(t, "kb-system", "db")

	// The incident: deleted with no namespace controller to empty it, then
	// force-finalized.
	mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "kb-system", metav1.DeleteOptions{}))
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, "kb-system", metav1.GetOptions{})
	mustNoErr(t, "get namespace", err)
	ns.Spec.Finalizers = nil
	_, err = c.kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	mustNoErr(t, "finalize namespace", err)
	waitFor(t, 30*time.Second, "the namespace to go", func() error {
		if c.value(t, "/registry/namespaces/kb-system") != nil {
			return errString("namespace still there")
		}
		return nil
	})
	// Creation times have a resolution of one second; a real incident has
	// minutes between the force-deletion and the new namespace.
	time.Sleep(1100 * time.Millisecond)
	c.createNamespace(t, "kb-system")
	c.createConfigMap(t, "kb-system", "fresh")
	c.startControllerManager(t, "replicaset-controller")
	var newPod string
	waitFor(t, 60*time.Second, "the resurrected ReplicaSet to create a pod", func() error {
		pods, err := c.kube.CoreV1().Pods("kb-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Name != "web-1-old" {
				newPod = p.Name
				return nil
			}
		}
		return errString("no new pod yet")
	})

	resurrected := []etcdscan.Class{etcdscan.ClassResurrected}
	want := map[string][]etcdscan.Class{
		"/registry/deployments/kb-system/web":   resurrected,
		"/registry/replicasets/kb-system/web-1": resurrected,
		"/registry/pods/kb-system/web-1-old":    resurrected,
		"/registry/secrets/kb-system/db":        resurrected,
		"/registry/pods/kb-system/" + newPod:    resurrected,
	}
	for _, args := range [][]string{{"-n", "kb-system"}, nil} {
		rep, code := c.scanJSON(t, args...)
		assertFindings(t, rep, want)
		if code != 0 {
			t.Errorf("%v: exit %d; resurrected objects are suspects, not ghosts", args, code)
		}
		for _, f := range rep.Findings {
			if f.Key == "/registry/pods/kb-system/"+newPod && !strings.Contains(f.Reason(), "resurrected owner ReplicaSet web-1") {
				t.Errorf("new pod: %s", f.Reason())
			}
			if f.Key == "/registry/secrets/kb-system/db" && !strings.Contains(f.Reason(), "before namespace kb-system was created again") {
				t.Errorf("secret: %s", f.Reason())
			}
		}
	}
	out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system")
	if code != 0 || !strings.Contains(out, "No ghost to purge") {
		t.Errorf("purge without --force-class resurrected: exit %d: %s\n%s", code, errOut, out)
	}
	out, errOut, code = c.regghost(t, "", "purge", "-n", "kb-system", "--force-class", "resurrected")
	if code != 0 || !strings.Contains(out, "Dry run: 5 keys") {
		t.Errorf("purge --force-class resurrected: exit %d: %s\n%s", code, errOut, out)
	}
}
