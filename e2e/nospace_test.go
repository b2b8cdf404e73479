package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestOutOfSpaceIncident is the space incident end to end, on a real etcd
// with a small quota and a real kube-apiserver: the ghosts of a
// force-deleted namespace fill etcd until its NOSPACE alarm stops every
// write (kubectl create fails); 'space' names the namespace and the
// resource that fill it; purge deletes the ghosts under the alarm (on this
// node's lock, the backup first); 'space reclaim' compacts, defragments and
// disarms; kubectl create succeeds again, and nothing but the ghosts is
// gone.
func TestOutOfSpaceIncident(t *testing.T) {
	c := startCluster(t, clusterOptions{etcdQuota: 40 << 20})
	c.kubectl(t, "", "create", "namespace", "bloat")
	c.kubectl(t, "", "-n", "bloat", "create", "configmap", "small", "--from-literal=a=b")
	c.forceDelete(t, "/registry/namespaces/bloat")
	// Big ConfigMaps of the gone namespace, as a controller in a loop
	// would have left them, until etcd is full.
	data := strings.Repeat("x", 900<<10)
	full := false
	for i := 0; i < 80 && !full; i++ {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("blob-%02d", i), Namespace: "bloat", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-0000000000%02d", i)),
				CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
			Data: map[string]string{"blob": data}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.etcd.Put(ctx, fmt.Sprintf("/registry/configmaps/bloat/blob-%02d", i), etcdtest.Encode(t, cm))
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			full = true
			break
		}
		mustNoErr(t, "put a ghost", err)
	}
	if !full || strings.Join(alarms(t, c.etcd), ",") != "NOSPACE" {
		t.Fatalf("etcd is not out of space: alarms %v", alarms(t, c.etcd))
	}
	if out, err := exec.Command(binsFor(t).kubectl, "--kubeconfig", c.kubeconfig, "-n", "default", "create", "configmap", "before", "--from-literal=a=b").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "database space exceeded") {
		t.Fatalf("kubectl create under the alarm: %v %s; want it refused for space", err, out)
	}
	before := c.state(t)

	out, errOut, code := c.regghost(t, "", "space")
	if code != 0 && code != 3 {
		t.Fatalf("space: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"bloat", "configmaps", "NOSPACE"} {
		if !strings.Contains(out, want) {
			t.Errorf("space does not name %s:\n%s", want, out)
		}
	}
	t.Logf("space:\n%s", out)
	checkCapture(t, "space", code, out, errOut)

	root := t.TempDir()
	out, errOut, code = c.regghost(t, "", "purge", "-n", "bloat", "--confirm", "--yes", "--backup-dir", root)
	if code != 0 {
		t.Fatalf("purge under the alarm: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"this node's lock", "NOSPACE alarm is still raised", "regghost space reclaim"} {
		if !strings.Contains(oneLine(errOut+out), want) {
			t.Errorf("purge under the alarm does not say %q:\n%s%s", want, out, errOut)
		}
	}
	t.Logf("purge:\n%s%s", out, errOut)
	checkCapture(t, "purge", code, out, errOut)

	out, errOut, code = c.regghost(t, "", "space", "reclaim", "--confirm", "--yes", "--backup-dir", root)
	if code != 0 {
		t.Fatalf("space reclaim: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("reclaim:\n%s%s", out, errOut)
	checkCapture(t, "reclaim", code, out, errOut)
	if got := alarms(t, c.etcd); len(got) != 0 {
		t.Fatalf("alarms after reclaim: %v", got)
	}
	waitFor(t, time.Minute, "kubectl create after reclaim", func() error {
		out, err := exec.Command(binsFor(t).kubectl, "--kubeconfig", c.kubeconfig, "-n", "default", "create", "configmap", "after", "--from-literal=a=b").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	// Nothing but the ghosts is gone.
	now := c.state(t)
	for k := range before.kvs {
		if _, ok := now.kvs[k]; !ok && !strings.HasPrefix(k, "/registry/configmaps/bloat/") && !renewedByTheCluster(k) && !strings.HasPrefix(k, "/registry/events/") {
			t.Errorf("%s was lost", k)
		}
	}
	for k := range now.kvs {
		if strings.HasPrefix(k, "/registry/configmaps/bloat/") {
			t.Errorf("ghost %s is still there", k)
		}
	}
}
