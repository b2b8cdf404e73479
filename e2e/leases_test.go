package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/regghost/regghost/internal/etcdtest"
)

// leasesDoc is the part of `regghost leases -o json` the test reads.
type leasesDoc struct {
	Events     int                    `json:"events"`
	Granted    int                    `json:"granted"`
	Keyless    int                    `json:"keyless"`
	PastTTL    []struct{ Key string } `json:"pastTTL"`
	NoLease    []struct{ Key string } `json:"noLease"`
	Big        []struct{ Keys int }   `json:"big"`
	Unexpected []struct{ Key string } `json:"unexpected"`
	Masters    []struct {
		IP        string `json:"ip"`
		NotServed string `json:"notServed"`
	} `json:"masterLeases"`
}

// TestLeasesAudit: on a real kube-apiserver run with a short --event-ttl,
// the events it writes itself (each under its lease) are no fault and the
// audit exits 0; then each class is staged as it happens and found
// exactly: an event kept alive past its TTL by a lease renewed (a leader
// change restarts every TTL), events a restore wrote back without a lease,
// one lease holding more keys than the limit, a key under a lease that is
// neither an event nor a masterlease, keyless leases (counted, no fault),
// a masterlease of an address no kube-apiserver answers at. The audit
// writes nothing.
func TestLeasesAudit(t *testing.T) {
	parallel(t)
	// kube-apiserver writes its own masterlease (the lease endpoint
	// reconciler, kubeadm's default); kube-controller-manager's ReplicaSet
	// controller writes events of its own, as in production. Its event TTL
	// (10m) outlasts the test: no event expires by itself meanwhile, and
	// its events, under leases granted for 10m, are judged against those
	// even when regghost is told a shorter TTL.
	// The lease reconciler refuses a loopback address: kube-apiserver binds
	// to this machine's own (without one, none writes its masterlease and
	// the test stages it).
	opts := clusterOptions{apiserverArgs: []string{"--event-ttl", "10m"}}
	self := hostIP()
	if self != "" {
		opts.apiserverIP, opts.apiserverName = self, "apiserver"
		opts.apiserverArgs = append(opts.apiserverArgs, "--endpoint-reconciler-type", "lease")
	} else {
		t.Log("no address but loopback: kube-apiserver runs without the lease reconciler, its masterlease staged")
	}
	c := startCluster(t, opts)
	ctx := context.Background()
	c.createNamespace(t, "shop")
	c.startControllerManager(t, "replicaset-controller")
	_, err := c.kube.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "registry.k8s.io/pause:3.10"}}}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create the ReplicaSet", err)
	controllerEvents := func() int {
		l, err := c.kube.CoreV1().Events("shop").List(ctx, metav1.ListOptions{FieldSelector: "reason=SuccessfulCreate"})
		mustNoErr(t, "list the controller's events", err)
		return len(l.Items)
	}
	waitFor(t, time.Minute, "the ReplicaSet controller's events", func() error {
		if n := controllerEvents(); n < 2 {
			return fmt.Errorf("%d SuccessfulCreate events", n)
		}
		return nil
	})
	own := "/registry/masterleases/" + self
	if self == "" {
		// kube-apiserver's own masterlease, as the reconciler writes it.
		u, err := url.Parse(c.rest.Host)
		mustNoErr(t, "parse "+c.rest.Host, err)
		port, _ := strconv.Atoi(u.Port())
		self, own = "127.0.0.1", "/registry/masterleases/127.0.0.1"
		l, err := c.etcd.Grant(ctx, 15)
		mustNoErr(t, "grant", err)
		keep, err := c.etcd.KeepAlive(ctx, l.ID)
		mustNoErr(t, "keep alive", err)
		go func() {
			for range keep {
			}
		}()
		_, err = c.etcd.Put(ctx, own, etcdtest.Encode(t, &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: self}}, Ports: []corev1.EndpointPort{{Name: "https", Port: int32(port)}}}}}), clientv3.WithLease(l.ID))
		mustNoErr(t, "stage kube-apiserver's masterlease", err)
	}
	waitFor(t, time.Minute, "kube-apiserver's own masterlease", func() error {
		if c.value(t, own) == nil {
			return fmt.Errorf("no %s", own)
		}
		return nil
	})
	for i := range 5 {
		_, err := c.kube.CoreV1().Events("shop").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web.%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web"}, Reason: "Pulled", Message: "pulled", Type: "Normal",
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now()}, metav1.CreateOptions{})
		mustNoErr(t, "create event", err)
	}
	audit := func(args ...string) (leasesDoc, int, string) {
		out, errOut, code := c.regghost(t, "", append([]string{"leases", "-o", "json"}, args...)...)
		var doc leasesDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("leases -o json: exit %d: %v\n%s\n%s", code, err, errOut, out)
		}
		return doc, code, errOut
	}
	doc, code, errOut := audit("--event-ttl", "2m")
	if code != 0 || doc.Events < 5 || len(doc.NoLease)+len(doc.PastTTL)+len(doc.Big)+len(doc.Unexpected) != 0 {
		t.Fatalf("a healthy cluster: exit %d, %+v\n%s", code, doc, errOut)
	}

	old := time.Now().Add(-3 * time.Hour)
	event := func(name string) string {
		return etcdtest.Encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta:     metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("u-" + name), CreationTimestamp: metav1.NewTime(old)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web"}, Reason: "BackOff", LastTimestamp: metav1.NewTime(old)})
	}
	// The leases events hang on are granted for the event TTL regghost is
	// told (30s) and kept alive, as leader changes keep them without
	// lease checkpointing.
	const ttl = 30
	keepCtx, stopKeeping := context.WithCancel(ctx)
	defer stopKeeping()
	grant := func(seconds int64, keep bool) clientv3.LeaseID {
		l, err := c.etcd.Grant(ctx, seconds)
		mustNoErr(t, "grant a lease", err)
		if keep {
			ch, err := c.etcd.KeepAlive(keepCtx, l.ID)
			mustNoErr(t, "keep a lease alive", err)
			go func() {
				for range ch {
				}
			}()
		}
		return l.ID
	}
	put := func(key, value string, lease clientv3.LeaseID) {
		var opts []clientv3.OpOption
		if lease != 0 {
			opts = append(opts, clientv3.WithLease(lease))
		}
		_, err := c.etcd.Put(ctx, key, value, opts...)
		mustNoErr(t, "put "+key, err)
	}
	kept := grant(ttl, true) // renewed: its TTL never runs out
	put("/registry/events/shop/kept.1", event("kept.1"), kept)
	put("/registry/events/shop/restored.1", event("restored.1"), 0)
	put("/registry/events/shop/restored.2", event("restored.2"), 0)
	big := grant(ttl, true)
	// One lease holding more keys than kube-apiserver ever puts on one.
	for i := range bigKeys {
		put(fmt.Sprintf("/registry/events/load/e%04d", i), event(fmt.Sprintf("e%04d", i)), big)
	}
	put("/registry/configmaps/shop/leased", "x", kept)
	grant(3600, false)
	grant(3600, false)
	ep := etcdtest.Encode(t, &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.9"}}, Ports: []corev1.EndpointPort{{Port: int32(freePort(t))}}}}})
	put("/registry/masterleases/127.0.0.9", ep, grant(3600, false))
	// An object kube-apiserver creates after them: its creation time (the
	// API server's clock) bounds their last writes. Their own timestamps
	// say three hours; etcd's writes are judged once the marker is older
	// than the TTL and the lease reuse (60s) and the clock skew allowed.
	marker, err := c.kube.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{})
	mustNoErr(t, "create the marker", err)
	// Before then they are too young by etcd's writes: nothing is past.
	doc, _, errOut = audit("--event-ttl", fmt.Sprint(ttl, "s"))
	if len(doc.PastTTL) != 0 {
		t.Errorf("events written to etcd moments ago judged past the TTL by their own timestamps: %+v\n%s", doc.PastTTL, errOut)
	}
	time.Sleep(time.Until(marker.CreationTimestamp.Add(ttl*time.Second + time.Minute + 30*time.Second + 15*time.Second)))

	before := c.state(t)
	doc, code, errOut = audit("--event-ttl", "30s")
	keys := func(l []struct{ Key string }) string {
		var out []string
		for _, k := range l {
			out = append(out, k.Key)
		}
		return strings.Join(out, " ")
	}
	if code != 3 {
		t.Errorf("exit %d, want 3\n%s", code, errOut)
	}
	if got := keys(doc.NoLease); got != "/registry/events/shop/restored.1 /registry/events/shop/restored.2" {
		t.Errorf("no lease: %s", got)
	}
	if got := keys(doc.PastTTL); !strings.Contains(got, "/registry/events/shop/kept.1") || strings.Contains(got, "/registry/events/shop/web.") {
		t.Errorf("past the TTL: %s", got)
	}
	if len(doc.Big) != 1 || doc.Big[0].Keys != bigKeys {
		t.Errorf("big leases: %+v", doc.Big)
	}
	if got := keys(doc.Unexpected); got != "/registry/configmaps/shop/leased" {
		t.Errorf("unexpected: %s", got)
	}
	if doc.Keyless < 2 || doc.Granted < 5 {
		t.Errorf("granted %d, keyless %d", doc.Granted, doc.Keyless)
	}
	// kube-apiserver's own masterlease is served; the one staged is not.
	var served, notServed []string
	for _, m := range doc.Masters {
		if m.NotServed == "" {
			served = append(served, m.IP)
		} else {
			notServed = append(notServed, m.IP)
		}
	}
	if strings.Join(served, " ") != self || strings.Join(notServed, " ") != "127.0.0.9" {
		t.Errorf("masterleases: %+v", doc.Masters)
	}
	out, errOut, code := c.regghost(t, "", "leases", "--event-ttl", "30s")
	checkCapture(t, "audit", code, "$ regghost leases --event-ttl 30s", errOut, out)
	if code != 3 || !strings.Contains(oneLine(out), "event TTL 30s (--event-ttl)") || !strings.Contains(oneLine(out), "127.0.0.9: NO kube-apiserver answers") {
		t.Errorf("leases: exit %d\n%s\n%s", code, out, errOut)
	}
	// scan names the classes from its own pass, judged by kube-apiserver's
	// defaults here (1h, 1000 keys a lease): the events restored without a
	// lease, the lease of 1,001 keys, the key under a lease that is no
	// event, the masterlease.
	out, errOut, _ = c.regghost(t, "", "scan")
	if want := "Leases: 2 events under no lease (they never expire), 1 lease holding more keys than a revoke can take without stalling etcd, 1 key under a lease that is neither an event nor a masterlease, 1 masterlease no kube-apiserver answers at"; !strings.Contains(oneLine(out), want) {
		t.Errorf("scan's summary does not say %q:\n%s\n%s", want, out, errOut)
	}
	c.assertChangedOnly(t, "leases and scan", before, nil)

	// The removal: what outlived its TTL goes, in batches, behind a backup;
	// the young events kube-apiserver wrote, the key under a lease that is
	// not an event, and everything else stay; /readyz never fails twice in a
	// row (etcd is never stalled).
	var gone []string
	for i := range bigKeys {
		gone = append(gone, fmt.Sprintf("/registry/events/load/e%04d", i))
	}
	gone = append(gone, "/registry/events/shop/kept.1", "/registry/events/shop/restored.1", "/registry/events/shop/restored.2", "/registry/masterleases/127.0.0.9")
	// Young events, written now: never removed.
	for i := range 3 {
		_, err := c.kube.CoreV1().Events("shop").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("young.%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web"}, Reason: "Pulled", Message: "pulled", Type: "Normal",
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now()}, metav1.CreateOptions{})
		mustNoErr(t, "create event", err)
	}
	before = c.state(t)
	ready := watchReadyz(t, c)
	root := filepath.Join(t.TempDir(), "backups")
	out, errOut, code = c.regghost(t, "", "leases", "--event-ttl", "30s", "--confirm", "--yes", "--batch-size", "64", "--backup-dir", root)
	if bad := ready(); bad != "" {
		t.Errorf("kube-apiserver's /readyz during the removal: %s", bad)
	}
	checkCapture(t, "confirm", code, "$ regghost leases --event-ttl 30s --confirm", errOut, out)
	// 3: the key under a lease that is not an event is left, said.
	if want := fmt.Sprintf("Deleted %d of %d planned keys", bigKeys+4, bigKeys+4); code != 3 || !strings.Contains(oneLine(out), want) {
		t.Errorf("leases --confirm: exit %d\n%s\n%s", code, out, errOut)
	}
	c.assertChangedOnly(t, "leases --confirm", before, gone)
	for _, k := range gone {
		if c.value(t, k) != nil {
			t.Errorf("%s is still there", k)
		}
	}
	for _, k := range []string{"/registry/configmaps/shop/leased"} {
		if c.value(t, k) == nil {
			t.Errorf("%s was deleted", k)
		}
	}
	for i := range 3 {
		if _, err := c.kube.CoreV1().Events("shop").Get(ctx, fmt.Sprintf("young.%d", i), metav1.GetOptions{}); err != nil {
			t.Errorf("young event young.%d: %v", i, err)
		}
	}
	if n := controllerEvents(); n < 2 {
		t.Errorf("the ReplicaSet controller's events: %d left, want them all", n)
	}
	if c.value(t, own) == nil {
		t.Error("kube-apiserver's own masterlease was deleted")
	}

	// restore puts every key back, the events under a lease again.
	out, errOut, code = c.regghost(t, "", "restore", backupFrom(t, out), "--confirm", "--yes")
	if code != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, k := range gone {
		if c.value(t, k) == nil {
			t.Errorf("restore did not put %s back", k)
		}
	}
}

// bigKeys is how many events the big lease of TestLeasesAudit holds: more
// than kube-apiserver's 1000 a lease.
const bigKeys = 1001

// watchReadyz asks kube-apiserver's /readyz every 200ms until the returned
// function is called, which says what was not 200 twice in a row ("" when
// no two answers in a row were). One answer alone is not a stall: readyz
// gives etcd's read 2 s, which a loaded machine's scheduler may take; a
// revoke that stalls etcd fails every answer while it lasts.
func watchReadyz(t *testing.T, c *cluster) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string)
	go func() {
		var bad []string
		last := ""
		for ctx.Err() == nil {
			var code int
			err := c.kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Error()
			switch {
			case ctx.Err() != nil:
			case err != nil || code != 200:
				this := fmt.Sprintf("%d %v", code, err)
				if last != "" {
					bad = append(bad, last+", then "+this)
				}
				last = this
			default:
				last = ""
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		done <- strings.Join(bad, "; ")
	}()
	return func() string { cancel(); return <-done }
}

// hostIP is this machine's first IPv4 address that is not loopback ("" when
// it has none).
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}
