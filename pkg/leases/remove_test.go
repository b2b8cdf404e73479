package leases

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRemoveOnlyWhatOutlivedItsTTL: the removal deletes the events past
// their TTL (under a lease or none) and the masterleases nothing answers
// at, behind a verified backup; an event written since the audit, an event
// younger than the TTL, a masterlease whose server answers again at the
// write, and every other key are left exactly as they were.
func TestRemoveOnlyWhatOutlivedItsTTL(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ks := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-ks"}}
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string, l clientv3.LeaseID) {
		t.Helper()
		var opts []clientv3.OpOption
		if l != 0 {
			opts = append(opts, clientv3.WithLease(l))
		}
		if _, err := cli.Put(ctx, key, value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	put("/registry/namespaces/kube-system", etcdtest.Encode(t, ks), 0)
	// In revision order as kube-apiserver created them (its clock in each
	// creationTimestamp): restored.old was written back without a lease
	// five hours ago, and events were created after it.
	put("/registry/events/shop/old.1", event(t, "shop", "old.1", "BackOff", now.Add(-6*time.Hour)), lease.ID)
	put("/registry/events/web/restored.old", eventAt(t, "web", "restored.old", "Killing", now.Add(-9*time.Hour), now.Add(-9*time.Hour)), 0)
	put("/registry/events/shop/old.2", event(t, "shop", "old.2", "BackOff", now.Add(-5*time.Hour)), lease.ID)
	put("/registry/events/shop/mid.1", eventAt(t, "shop", "mid.1", "Pulled", now.Add(-4*time.Hour), now.Add(-time.Minute)), lease.ID)
	put("/registry/events/shop/young.1", event(t, "shop", "young.1", "Pulled", now.Add(-10*time.Minute)), lease.ID)
	// Written back without a lease just now: past the TTL by its own
	// timestamps, young by etcd's write; left until it is old.
	put("/registry/events/web/restored.young", eventAt(t, "web", "restored.young", "Killing", now.Add(-9*time.Hour), now.Add(-9*time.Hour)), 0)
	put("/registry/events/shop/new.1", event(t, "shop", "new.1", "Pulled", now.Add(-time.Minute)), lease.ID)
	put("/registry/masterleases/10.0.0.9", "ep", lease.ID)
	put("/registry/masterleases/10.0.0.8", "ep", lease.ID)
	put("/registry/masterleases/10.0.0.1", "ep", lease.ID) // the server running
	put("/registry/configmaps/app/settings", "x", 0)
	answering := map[string]bool{"10.0.0.1": true}
	serves := func(_ context.Context, ip string, _ int32) string {
		if answering[ip] {
			return ""
		}
		return "connection refused"
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 5)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(ctx, store, Options{Now: func() time.Time { return now }, Serves: serves})
	if err != nil {
		t.Fatal(err)
	}
	plan := Plan(a, "")
	var planned []string
	for _, e := range plan.Events {
		planned = append(planned, e.Key)
	}
	for _, m := range plan.MasterLeases {
		planned = append(planned, m.Key)
	}
	slices.Sort(planned)
	want := []string{"/registry/events/shop/old.1", "/registry/events/shop/old.2", "/registry/events/web/restored.old", "/registry/masterleases/10.0.0.8", "/registry/masterleases/10.0.0.9"}
	if !slices.Equal(planned, want) {
		t.Fatalf("planned %v, want %v", planned, want)
	}
	if !slices.ContainsFunc(plan.Left, func(s string) bool { return strings.Contains(s, "1 event with no lease is not past the event TTL") }) {
		t.Errorf("the plan does not say the young event with no lease is left: %v", plan.Left)
	}
	// Between the audit and the write: old.2 is written again, and a
	// kube-apiserver answers at 10.0.0.8 once more.
	put("/registry/events/shop/old.2", event(t, "shop", "old.2", "BackOff", now), lease.ID)
	answering["10.0.0.8"] = true
	before := dump(t, cli)
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	res, err := Remove(ctx, plan, RemoveOptions{Client: cli, Prefix: "/registry/", BackupRoot: t.TempDir(), Serves: serves,
		Pacing: etcdwrite.Pacing{BatchSize: 2, PerSecond: 1000}, Now: func() time.Time { return now }, RenewWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	after := dump(t, cli)
	gone := []string{"/registry/events/shop/old.1", "/registry/events/web/restored.old", "/registry/masterleases/10.0.0.9"}
	for k, v := range before {
		_, still := after[k]
		switch {
		case slices.Contains(gone, k) && still:
			t.Errorf("%s is still there", k)
		case !slices.Contains(gone, k) && (!still || after[k] != v) && !strings.HasPrefix(k, "/regghost"):
			t.Errorf("%s changed or went, though the removal did not plan it", k)
		}
	}
	if res.Deleted != 3 {
		t.Errorf("deleted %d, want 3: %+v", res.Deleted, res.Results)
	}
	b, err := backup.ReadBackup(res.Dir)
	if err != nil {
		t.Fatalf("the backup: %v", err)
	}
	var backedUp []string
	for _, e := range b.Entries {
		backedUp = append(backedUp, e.Key)
	}
	slices.Sort(backedUp)
	if !slices.Equal(backedUp, gone) {
		t.Errorf("backed up %v, want %v", backedUp, gone)
	}
}

// dump is every key etcd holds with its value.
func dump(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	resp, err := cli.Get(context.Background(), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

// TestDialer: an address where anything accepts a connection answers
// (nothing is sent, no credential); a refused one does not.
func TestDialer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, open, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(open)
	if why := Dialer("1", time.Second)(context.Background(), "127.0.0.1", int32(port)); why != "" {
		t.Errorf("a listening address: %s", why)
	}
	l.Close()
	if why := Dialer(open, time.Second)(context.Background(), "127.0.0.1", 0); why == "" {
		t.Error("a closed address answers")
	}
}

// TestPlanRemovesAtMostMaxRemoval: one run removes at most MaxRemoval
// events past their TTL, the oldest first, and says how many it leaves for
// the next run.
func TestPlanRemovesAtMostMaxRemoval(t *testing.T) {
	defer func(n int) { MaxRemoval = n }(MaxRemoval)
	MaxRemoval = 2
	a := &Audit{EventTTL: time.Hour}
	for i, age := range []time.Duration{3, 9, 5, 7, 4} {
		a.PastTTL = append(a.PastTTL, Event{Key: fmt.Sprintf("/registry/events/shop/e%d", i), WrittenBefore: now.Add(-age * time.Hour)})
	}
	r := Plan(a, "")
	var got []string
	for _, e := range r.Events {
		got = append(got, e.Key)
	}
	if want := []string{"/registry/events/shop/e1", "/registry/events/shop/e3"}; !slices.Equal(got, want) {
		t.Errorf("planned %v, want the two oldest %v", got, want)
	}
	if !slices.ContainsFunc(r.Left, func(s string) bool {
		return strings.HasPrefix(s, "3 more events past the TTL are left for the next run")
	}) {
		t.Errorf("left %v", r.Left)
	}
}

// TestRemovalBudget: a removal's slowest time is its audit of every key at
// RemovalFloor and the deletes of at most MaxRemoval events with their
// read-back, known from two counts before anything is read.
func TestRemovalBudget(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	for i := range 30 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/events/ns/e%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/pods/ns/p%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/other/x", "x"); err != nil {
		t.Fatal(err)
	}
	p := etcdwrite.Pacing{BatchSize: 10, PerSecond: 1}
	b, err := RemovalBudget(ctx, cli, "/registry/", "", p, false)
	if err != nil {
		t.Fatal(err)
	}
	wantAudit := time.Duration(float64(50) / RemovalFloor * float64(time.Second))
	// 30 events: 3 transactions at 1 a second, a quarter more read back,
	// and the wait before a masterlease goes.
	if b.Keys != 50 || b.Events != 30 || b.Audit != wantAudit || b.Deletes != 3*time.Second+750*time.Millisecond+DefaultRenewWait || b.Total() != b.Audit+b.Deletes {
		t.Errorf("budget %+v", b)
	}
	// It fits in a quarter more than it takes, and names the timeout that
	// would do when it does not.
	if err := b.Fits(b.Total()*4/3, time.Minute); err != nil {
		t.Errorf("a budget that fits: %v", err)
	}
	// 20s of a 1m timeout used before: the timeout named counts them.
	err = b.Fits(b.Total(), b.Total()+20*time.Second)
	suggest := (20*time.Second + b.Total()*4/3 + time.Minute - 1).Truncate(time.Minute)
	for _, want := range []string{"50 keys", "30 of them events", "give --command-timeout " + suggest.String() + " or more", "nothing was changed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a budget that does not fit: %v, want %q", err, want)
		}
	}
	// No more than MaxRemoval events are counted for the deletes.
	defer func(n int) { MaxRemoval = n }(MaxRemoval)
	MaxRemoval = 10
	if b, _ = RemovalBudget(ctx, cli, "/registry/", "", p, false); b.Deletes != time.Second+250*time.Millisecond+DefaultRenewWait {
		t.Errorf("budget past MaxRemoval %+v", b)
	}
	// With -n, the namespace's events only, and no masterlease; kine
	// deletes one key a transaction.
	if _, err := cli.Put(ctx, "/registry/events/shop/e1", "x"); err != nil {
		t.Fatal(err)
	}
	if b, _ = RemovalBudget(ctx, cli, "/registry/", "shop", p, true); b.Events != 1 || b.Deletes != time.Second+250*time.Millisecond {
		t.Errorf("budget of -n shop on kine %+v", b)
	}
}

// TestRemovalFits: the deletes the audit found, with their read-back and a
// quarter to spare, must fit in what --command-timeout leaves; else the
// refusal names the pace and the timeout, before anything is written.
func TestRemovalFits(t *testing.T) {
	r := &Removal{Events: make([]Event, 20), MasterLeases: []MasterLease{{IP: "10.0.0.9"}}}
	p := etcdwrite.Pacing{BatchSize: 10, PerSecond: 1}
	// 21 keys: 3 transactions, a quarter more read back, the masterlease's wait.
	need := 3*time.Second + 750*time.Millisecond + DefaultRenewWait
	if d := r.Duration(p, false); d != need {
		t.Fatalf("duration %s, want %s", d, need)
	}
	if err := r.Fits(p, false, need*4/3, time.Minute); err != nil {
		t.Errorf("deletes that fit: %v", err)
	}
	err := r.Fits(p, false, need, 5*time.Minute)
	for _, want := range []string{"the deletes take about 19s at --rate 1 with --batch-size 10", "more than --command-timeout 5m0s leaves", "nothing was changed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("deletes that do not fit: %v, want %q", err, want)
		}
	}
	// On kine, one key a transaction: 21 transactions.
	if d := r.Duration(p, true); d != 21*time.Second+5250*time.Millisecond+DefaultRenewWait {
		t.Errorf("duration on kine %s", d)
	}
}
