package etcdscan

import (
	"context"
	"fmt"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
)

// BenchmarkScan scans 20,000 encoded pods in an embedded etcd, streamed and
// paged. `make bench` measures a million keys against etcdctl.
func BenchmarkScan(b *testing.B) {
	cli, _ := etcdtest.Start(b)
	ctx := context.Background()
	for j := 0; j < 20000; j++ {
		ns, name := fmt.Sprintf("ns%d", j%50), fmt.Sprintf("p%d", j)
		if _, err := cli.Put(ctx, ObjectKey("/registry/", "pods", ns, name), encode(b, pod(ns, name))); err != nil {
			b.Fatal(err)
		}
	}
	for _, paged := range []bool{false, true} {
		b.Run(fmt.Sprintf("paged=%v", paged), func(b *testing.B) {
			for b.Loop() {
				store, err := NewEtcdStore(ctx, cli, DefaultPageSize)
				if err != nil {
					b.Fatal(err)
				}
				if paged {
					store.DisableStreaming()
				}
				if _, err := Scan(ctx, store, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
