package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// leasesEvents sizes the leases case (0: skip it); leasesRate and
// leasesBatch are the removal's --rate and --batch-size.
var leasesEvents, leasesRate, leasesBatch int

// loadEvents writes n events as kube-apiserver does: under etcd leases of
// an hour, at most 1000 events a lease, in 100 namespaces; each last
// written three hours ago by its own timestamps, and a ConfigMap created
// two hours ago by the API server's clock after them, so every one is past
// the TTL by the servers' clocks.
func loadEvents(ctx context.Context, cli *clientv3.Client, n int) error {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	enc := func(o runtime.Object) string {
		var b bytes.Buffer
		if err := ser.Encode(o, &b); err != nil {
			panic(err)
		}
		return b.String()
	}
	old := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	work := make(chan []clientv3.Op, 64)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for ops := range work {
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var lease clientv3.LeaseID
	var ops []clientv3.Op
	for i := range n {
		if i%1000 == 0 {
			l, err := cli.Grant(ctx, 3600)
			if err != nil {
				return fmt.Errorf("grant: %w", err)
			}
			lease = l.ID
		}
		ns, name := fmt.Sprintf("team-%03d", i%100), fmt.Sprintf("api-%07d.%x", i, i*7919)
		ev := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("e-%d", i)), CreationTimestamp: old},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("api-%d", i%5000), UID: "p", APIVersion: "v1", ResourceVersion: "12345"},
			Reason:         "BackOff", Message: "Back-off restarting failed container api in pod api_" + ns, Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: old, LastTimestamp: old, Count: 12, Type: "Warning", ReportingController: "kubelet", ReportingInstance: "node-1"}
		ops = append(ops, clientv3.OpPut("/registry/events/"+ns+"/"+name, enc(ev), clientv3.WithLease(lease)))
		if len(ops) == 100 {
			select {
			case work <- ops:
			case err := <-errs:
				close(work)
				return err
			}
			ops = nil
		}
	}
	if len(ops) > 0 {
		work <- ops
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	marker := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "marker", UID: "m", CreationTimestamp: metav1.NewTime(time.Now().Add(-2 * time.Hour))}}
	_, err := cli.Put(ctx, "/registry/configmaps/default/marker", enc(marker))
	return err
}

// leasesTable measures, beside another client's puts every 20 ms, what an
// SRE runs against events that outlived their TTL: etcdctl lease list and
// one lease timetolive --keys per lease, regghost leases (the audit, one
// pass), regghost leases --confirm (the paced removal, behind its backup),
// and, loaded again, etcdctl del --prefix /registry/events/ (one request).
func leasesTable(ctx context.Context, t tools, n int) (string, error) {
	etcdBin, err := goOut("e2e/tools/etcd", "tool", "-n", "etcd")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "regghost-bench-leases")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ep, cli, stop, err := startEtcd(ctx, etcdBin, filepath.Join(dir, "data"))
	if err != nil {
		return "", err
	}
	defer stop()
	start := time.Now()
	if err := loadEvents(ctx, cli, n); err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	st, err := cli.Status(ctx, ep)
	if err != nil {
		return "", err
	}
	fmt.Printf("leases: loaded %d events on %d leases in %s; etcd %s db %d MiB\n", n, (n+999)/1000, time.Since(start).Round(time.Millisecond), st.Version, st.DbSize>>20)
	ctl := t.etcdctl + " --endpoints " + ep + " --command-timeout 30m"
	// regghost exits 3 when it finds (or leaves) a fault: that is the case here.
	regghost := func(args ...string) []string {
		return append([]string{"sh", "-c", `"$0" "$@" >/dev/null; c=$?; [ $c -le 3 ] || exit $c`, t.regghost}, args...)
	}
	common := []string{"--no-api", "--endpoints", ep, "--command-timeout", "60m"}
	var rows []latencyRow
	add := func(name string, cmds [][]string, d time.Duration) error {
		fmt.Printf("leases: %s\n", name)
		r, err := putLatency(ctx, cli, name, cmds, d)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, r)
		return nil
	}
	if err := add("idle", nil, 20*time.Second); err != nil {
		return "", err
	}
	script := fmt.Sprintf(`for id in $(%s lease list | tail -n +2); do %s lease timetolive --keys $id; done >/dev/null`, ctl, ctl)
	if err := add("etcdctl lease list, then lease timetolive --keys for each lease", [][]string{{"sh", "-c", script}}, 0); err != nil {
		return "", err
	}
	if err := add("regghost leases (the audit)", [][]string{regghost(append([]string{"leases"}, common...)...)}, 0); err != nil {
		return "", err
	}
	removal := fmt.Sprintf("regghost leases --confirm --rate %d --batch-size %d (backup, then paced deletes)", leasesRate, leasesBatch)
	if err := add(removal, [][]string{regghost(append([]string{"leases", "--confirm", "--yes", "--backup-dir", filepath.Join(dir, "backups"),
		"--rate", fmt.Sprint(leasesRate), "--batch-size", fmt.Sprint(leasesBatch)}, common...)...)}, 0); err != nil {
		return "", err
	}
	left, err := cli.Get(ctx, "/registry/events/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return "", err
	}
	if err := loadEvents(ctx, cli, n); err != nil {
		return "", fmt.Errorf("load again: %w", err)
	}
	if err := add("etcdctl del --prefix /registry/events/ (one request)", [][]string{{"sh", "-c", ctl + " del --prefix /registry/events/ >/dev/null"}}, 0); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## leases at %d events (%s)\n\netcd %s, %d events on %d leases of 1h (1000 events a lease, as kube-apiserver puts them), each past the TTL by the servers' clocks; "+
		"another client puts every 20 ms meanwhile. The removal left %d events.\n\n", n, time.Now().Format("2006-01-02"), st.Version, n, (n+999)/1000, left.Count)
	b.WriteString(renderLatency(rows))
	return b.String(), nil
}
