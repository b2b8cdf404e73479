package exporter

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/space"
)

// series gathers every series of c as "name{labels} value" lines, sorted.
func series(t *testing.T, c prometheus.Collector, prefix string) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var pairs []string
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+"="+l.GetValue())
			}
			out = append(out, mf.GetName()+"{"+strings.Join(pairs, ",")+"} "+strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestSummarizeSpaceBoundsLabels: the resources and namespaces holding the
// most bytes keep their names up to the limits, the rest are summed under
// "other"; a member that did not answer has no series, an unknown quota
// none either; every alarm is a series.
func TestSummarizeSpaceBoundsLabels(t *testing.T) {
	r := &space.Report{
		Resources: []space.Group{
			{Name: "configmaps", Usage: space.Usage{Keys: 3, Bytes: 3000}},
			{Name: "secrets", Usage: space.Usage{Keys: 2, Bytes: 200}},
			{Name: "pods", Usage: space.Usage{Keys: 1, Bytes: 100}},
		},
		Namespaces: []space.Group{
			{Name: "ghosttown", Usage: space.Usage{Keys: 3, Bytes: 3000}, Ghost: space.Usage{Keys: 3, Bytes: 3000}},
			{Name: "a", Usage: space.Usage{Keys: 2, Bytes: 200}},
			{Name: "b\xff", Usage: space.Usage{Keys: 1, Bytes: 100}, Ghost: space.Usage{Keys: 1, Bytes: 100}},
		},
		Members: []space.Member{
			{Member: etcdmembers.Member{Name: "m1", DBSize: 1000, DBSizeInUse: 750}, Fragmented: 250, Quota: 2000},
			{Member: etcdmembers.Member{Name: "m2", DBSize: 800, DBSizeInUse: 800}},
			{Member: etcdmembers.Member{Name: "m3", Unreachable: "context deadline exceeded"}},
		},
		Alarms: []space.Alarm{{Member: "m1", Alarm: "NOSPACE"}},
	}
	c := NewCollector(nil)
	c.space = SummarizeSpace(r, 1, 2)
	got := strings.Join(series(t, c, "regghost_etcd_"), "\n")
	want := strings.Join([]string{
		"regghost_etcd_alarm{alarm=NOSPACE,member=m1} 1",
		"regghost_etcd_ghost_bytes{namespace=ghosttown} 3000",
		"regghost_etcd_ghost_bytes{namespace=other} 100",
		"regghost_etcd_member_db_size_bytes{member=m1} 1000",
		"regghost_etcd_member_db_size_bytes{member=m2} 800",
		"regghost_etcd_member_db_size_in_use_bytes{member=m1} 750",
		"regghost_etcd_member_db_size_in_use_bytes{member=m2} 800",
		"regghost_etcd_member_fragmented_ratio{member=m1} 0.25",
		"regghost_etcd_member_fragmented_ratio{member=m2} 0",
		"regghost_etcd_member_quota_bytes{member=m1} 2000",
		"regghost_etcd_namespace_bytes{namespace=ghosttown} 3000",
		"regghost_etcd_namespace_bytes{namespace=other} 300",
		"regghost_etcd_resource_bytes{resource=configmaps} 3000",
		"regghost_etcd_resource_bytes{resource=other} 100",
		"regghost_etcd_resource_bytes{resource=secrets} 200",
		"regghost_etcd_resource_keys{resource=configmaps} 3",
		"regghost_etcd_resource_keys{resource=other} 1",
		"regghost_etcd_resource_keys{resource=secrets} 2",
	}, "\n")
	if got != want {
		t.Errorf("series:\n%s\nwant:\n%s", got, want)
	}
}

// TestMeasureSpace runs one serve cycle on an embedded etcd through a
// Source: the bytes the scan read are exported by resource and namespace,
// the ghosts' bytes by namespace, and the member's sizes and quota.
func TestMeasureSpace(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	ghost := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"g","namespace":"gone","uid":"u-g"},"data":{"p":"` + strings.Repeat("x", 4000) + `"}}`
	kept := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"u-d"}}`
	for k, v := range map[string]string{"/registry/configmaps/gone/g": ghost, "/registry/namespaces/default": kept} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCollector(nil)
	scan := func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
		return etcdscan.Scan(ctx, in.Store, etcdscan.Options{APIUnavailable: "test", Now: func() time.Time { return time.Unix(2e9, 0) }})
	}
	src := NewSource(SourceOptions{
		Connect: func(context.Context) (*clientv3.Client, error) {
			return clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		},
		LoadDecrypter: func(context.Context) (*decrypt.Decrypter, error) { return nil, nil },
		OpenAPI:       func() (*apiview.View, string) { return nil, "--no-api given" },
		DialTimeout:   5 * time.Second, PageSize: etcdscan.DefaultPageSize, Stream: true,
		Scan: c.MeasureSpace(SpaceOptions{Prefix: "/registry/", NamespaceLimit: 10, Members: space.MemberOptions{Timeout: 5 * time.Second}}, scan),
	})
	defer src.Close()
	rep, err := src.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	got := map[string]bool{}
	for _, s := range series(t, c, "regghost_etcd_") {
		name, _, _ := strings.Cut(s, " ")
		got[name] = true
		switch {
		case strings.HasPrefix(s, "regghost_etcd_resource_bytes{resource=configmaps}"), strings.HasPrefix(s, "regghost_etcd_namespace_bytes{namespace=gone}"),
			strings.HasPrefix(s, "regghost_etcd_ghost_bytes{namespace=gone}"):
			if want := len("/registry/configmaps/gone/g") + len(ghost); !strings.HasSuffix(s, " "+strconv.Itoa(want)) {
				t.Errorf("%s, want %d bytes", s, want)
			}
		case strings.HasPrefix(s, "regghost_etcd_member_quota_bytes"):
			if !strings.HasSuffix(s, " "+strconv.Itoa(2<<30)) {
				t.Errorf("%s, want the default quota of 2 GiB", s)
			}
		}
	}
	for _, want := range []string{"regghost_etcd_resource_bytes{resource=configmaps}", "regghost_etcd_resource_keys{resource=namespaces}",
		"regghost_etcd_ghost_bytes{namespace=gone}", "regghost_etcd_member_db_size_bytes{member=default}",
		"regghost_etcd_member_db_size_in_use_bytes{member=default}", "regghost_etcd_member_fragmented_ratio{member=default}",
		"regghost_etcd_member_quota_bytes{member=default}"} {
		if !got[want] {
			t.Errorf("no series %s (got %v)", want, got)
		}
	}
}
