package space

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// op is one write of the fixture, as etcd applied it.
type op struct {
	key  string
	rev  int64
	size int64
	del  bool
}

// fixture writes a small cluster's keyspace and records every write:
//   - namespaces default and kept; configmap kept/busy written five times;
//   - configmaps gone/g1..g3 whose namespace has no key (ghosts);
//   - secret kept/old written, then deleted;
//   - compact_rev_key outside the prefix, written twice.
//
// With compact, etcd is compacted right after the first write of busy.
type fixture struct {
	cli     *clientv3.Client
	ep      string
	ops     []op
	compact int64
}

func newFixture(t *testing.T, compact bool) *fixture {
	t.Helper()
	cli, ep := etcdtest.Start(t)
	f := &fixture{cli: cli, ep: ep}
	ctx := context.Background()
	put := func(key, value string) {
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		f.ops = append(f.ops, op{key: key, rev: resp.Header.Revision, size: int64(len(key) + len(value))})
	}
	del := func(key string) {
		resp, err := cli.Delete(ctx, key)
		if err != nil || resp.Deleted != 1 {
			t.Fatalf("delete %s: %v", key, err)
		}
		f.ops = append(f.ops, op{key: key, rev: resp.Header.Revision, size: int64(len(key)), del: true})
	}
	ns := func(name string) string {
		return etcdtest.Encode(t, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-ns-" + name)}})
	}
	cm := func(namespace, name string, pad int) string {
		return etcdtest.Encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + namespace + "-" + name)},
			Data:       map[string]string{"pad": strings.Repeat("x", pad)}})
	}
	put("/registry/namespaces/default", ns("default"))
	put("/registry/namespaces/kept", ns("kept"))
	put("compact_rev_key", "1")
	put("/registry/configmaps/kept/busy", cm("kept", "busy", 100))
	if compact {
		f.compact = f.ops[len(f.ops)-1].rev
		if _, err := cli.Compact(ctx, f.compact, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		put("/registry/configmaps/kept/busy", cm("kept", "busy", 200+i))
	}
	for i, name := range []string{"g1", "g2", "g3"} {
		put("/registry/configmaps/gone/"+name, cm("gone", name, 2000+1000*i))
	}
	// A ghost written again: history a purge frees too.
	put("/registry/configmaps/gone/g1", cm("gone", "g1", 2500))
	put("/registry/secrets/kept/old", cm("kept", "old", 500))
	del("/registry/secrets/kept/old")
	put("compact_rev_key", "2")
	return f
}

// held is what etcd holds of each key after the compaction: every
// revision after it, and each key's newest at it unless a delete.
func (f *fixture) held() map[string][]op {
	out := map[string][]op{}
	newestAt := map[string]op{}
	for _, o := range f.ops {
		if o.rev > f.compact {
			out[o.key] = append(out[o.key], o)
		} else {
			newestAt[o.key] = o
		}
	}
	for k, o := range newestAt {
		if !o.del {
			out[k] = append([]op{o}, out[k]...)
		}
	}
	return out
}

// want is the truth of the fixture, counted from its writes.
type want struct {
	keys, bytes             int64
	histRevs, histBytes     int64
	tombs, deleted          int64
	ghostKeys, ghostBytes   int64
	ghostHistory            int64
	byResource, byNamespace map[string]int64
	busyRevisions           int64
}

func (f *fixture) want() want {
	w := want{byResource: map[string]int64{}, byNamespace: map[string]int64{}}
	for key, revs := range f.held() {
		last := revs[len(revs)-1]
		res, ns, outside := split("/registry/", []byte(key))
		if outside {
			res = []byte(OutsidePrefix)
		}
		for _, o := range revs[:len(revs)-1] {
			w.histRevs++
			w.histBytes += o.size
			if o.del {
				w.tombs++
			}
		}
		if last.del {
			w.tombs++
			w.histRevs++
			w.histBytes += last.size
			w.deleted++
			continue
		}
		w.keys++
		w.bytes += last.size
		w.byResource[string(res)] += last.size
		if len(ns) > 0 {
			w.byNamespace[string(ns)] += last.size
		}
		if string(ns) == "gone" {
			w.ghostKeys++
			w.ghostBytes += last.size
			for _, o := range revs[:len(revs)-1] {
				w.ghostHistory += o.size
			}
		}
		if strings.HasSuffix(key, "/busy") {
			w.busyRevisions = int64(len(revs))
		}
	}
	return w
}

// scanOf is the scan regghost runs, from etcd alone.
func scanOf(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error) {
	return etcdscan.Scan(ctx, store, etcdscan.Options{Prefix: "/registry/", Now: func() time.Time { return time.Unix(2e9, 0) }, APIUnavailable: "test"})
}

func group(gs []Group, name string) Group {
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	return Group{Name: name}
}

// checkValues checks what every report says exactly, live or from a file:
// the values held now, by resource, namespace and class, the ghosts, the
// largest key and the purge estimate's values.
func checkValues(t *testing.T, r *Report, w want) {
	t.Helper()
	if r.Total.Keys != w.keys || r.Total.Bytes != w.bytes {
		t.Errorf("total %d keys %d bytes, want %d keys %d bytes", r.Total.Keys, r.Total.Bytes, w.keys, w.bytes)
	}
	for res, b := range w.byResource {
		if g := group(r.Resources, res); g.Bytes != b {
			t.Errorf("resource %s: %d bytes, want %d", res, g.Bytes, b)
		}
	}
	for ns, b := range w.byNamespace {
		if g := group(r.Namespaces, ns); g.Bytes != b {
			t.Errorf("namespace %s: %d bytes, want %d", ns, g.Bytes, b)
		}
	}
	if len(r.Namespaces) == 0 || r.Namespaces[0].Name != "gone" {
		t.Errorf("namespaces ranked %v, want gone first", r.Namespaces)
	}
	if gone := group(r.Namespaces, "gone"); gone.Ghost.Keys != w.ghostKeys || gone.Ghost.Bytes != w.ghostBytes {
		t.Errorf("namespace gone's ghosts: %+v, want %d keys %d bytes", gone.Ghost, w.ghostKeys, w.ghostBytes)
	}
	if cms := group(r.Resources, "configmaps"); cms.Ghost.Bytes != w.ghostBytes {
		t.Errorf("configmaps' ghosts: %d bytes, want %d", cms.Ghost.Bytes, w.ghostBytes)
	}
	if len(r.Classes) != 1 || r.Classes[0].Class != string(etcdscan.ClassOrphanedNamespace) || !r.Classes[0].Ghost ||
		r.Classes[0].Keys != w.ghostKeys || r.Classes[0].Bytes != w.ghostBytes || len(r.Classes[0].Namespaces) != 1 || r.Classes[0].Namespaces[0] != "gone" {
		t.Errorf("classes %+v, want orphaned-namespace with the %d ghosts of gone (%d bytes)", r.Classes, w.ghostKeys, w.ghostBytes)
	}
	if r.Ghosts.Keys != w.ghostKeys || r.Estimates.PurgeGhosts.Bytes != w.ghostBytes {
		t.Errorf("ghosts %+v, purge estimate %+v; want %d keys %d bytes", r.Ghosts, r.Estimates.PurgeGhosts, w.ghostKeys, w.ghostBytes)
	}
	if len(r.LargestKeys) == 0 || r.LargestKeys[0].Key != "/registry/configmaps/gone/g3" || r.LargestKeys[0].Namespace != "gone" || r.LargestKeys[0].Resource != "configmaps" {
		t.Errorf("largest keys %+v, want gone/g3 first", r.LargestKeys)
	}
	if o := group(r.Resources, OutsidePrefix); o.Keys != 1 || r.Outside.Keys != 1 {
		t.Errorf("outside the prefix: %+v, total %+v; want compact_rev_key", o, r.Outside)
	}
}

// TestFromEtcd accounts an embedded etcd, compacted or not: the values are
// exact; each key's history is bounded, the truth inside the bounds; the
// member's sizes and quota are read, no alarm is raised.
func TestFromEtcd(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "never compacted", true: "compacted"}[compact], func(t *testing.T) {
			f := newFixture(t, compact)
			ctx := context.Background()
			store, err := etcdscan.NewEtcdStore(ctx, f.cli, 0)
			if err != nil {
				t.Fatal(err)
			}
			r, err := FromEtcd(ctx, f.cli, store, scanOf, LiveOptions{Prefix: "/registry/", Members: MemberOptions{Timeout: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			w := f.want()
			checkValues(t, r, w)
			if r.CompactRevision != f.compact || r.ExactHistory {
				t.Errorf("compacted at %d (exact %v), want %d, bounded", r.CompactRevision, r.ExactHistory, f.compact)
			}
			// The live bounds leave out the deleted secret's revisions.
			live := f.held()
			delete(live, "/registry/secrets/kept/old")
			var truth int64
			for _, revs := range live {
				truth += int64(len(revs)) - 1
			}
			if r.Total.HistoryRevisions > truth || r.Total.HistoryRevisionsMax < truth {
				t.Errorf("history revisions bounded %d..%d, truth %d", r.Total.HistoryRevisions, r.Total.HistoryRevisionsMax, truth)
			}
			if len(r.MostRevisions) == 0 || r.MostRevisions[0].Key != "/registry/configmaps/kept/busy" ||
				r.MostRevisions[0].Revisions > w.busyRevisions || max(r.MostRevisions[0].RevisionsMax, r.MostRevisions[0].Revisions) < w.busyRevisions {
				t.Errorf("most revisions %+v, want kept/busy with %d", r.MostRevisions, w.busyRevisions)
			}
			if len(r.Members) != 1 {
				t.Fatalf("members %+v, want one", r.Members)
			}
			m := r.Members[0]
			if m.Unreachable != "" || !m.Leader || m.DBSize <= 0 || m.DBSizeInUse <= 0 || m.DBSizeInUse > m.DBSize ||
				m.Fragmented != m.DBSize-m.DBSizeInUse || m.Quota != 2<<30 || m.QuotaSource != QuotaFromStatus {
				t.Errorf("member %+v", m)
			}
			if len(r.Alarms) != 0 || len(r.Notes) != 0 {
				t.Errorf("alarms %v, notes %v; want none", r.Alarms, r.Notes)
			}
			if r.Estimates.Defragmentation != m.Fragmented {
				t.Errorf("defragmentation estimate %d, want the member's fragmented %d", r.Estimates.Defragmentation, m.Fragmented)
			}
		})
	}
}

// saveSnapshot writes a snapshot of the embedded etcd to a new file.
func saveSnapshot(t *testing.T, ep string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.db")
	if _, err := snapshot.SaveWithVersion(context.Background(), zap.NewNop(), clientv3.Config{Endpoints: []string{ep}}, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFromFile accounts a snapshot of the embedded etcd after puts and
// deletes, compacted or not: every revision it holds is counted exactly,
// per key and per resource, the deleted key's tombstone too.
func TestFromFile(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "never compacted", true: "compacted"}[compact], func(t *testing.T) {
			f := newFixture(t, compact)
			path := saveSnapshot(t, f.ep)
			st, err := dbfile.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r, err := FromFile(context.Background(), st, scanOf, Options{Prefix: "/registry/"})
			if err != nil {
				t.Fatal(err)
			}
			w := f.want()
			checkValues(t, r, w)
			if !r.ExactHistory || r.CompactRevision != f.compact || r.File == nil || r.Source != path {
				t.Errorf("exact %v, compacted at %d, source %s; want exact, %d, %s", r.ExactHistory, r.CompactRevision, r.Source, f.compact, path)
			}
			if r.Total.HistoryRevisions != w.histRevs || r.Total.HistoryBytes != w.histBytes || r.Total.Tombstones != w.tombs || r.Total.DeletedKeys != w.deleted {
				t.Errorf("history %+v, want %d revisions %d bytes %d tombstones %d deleted keys", r.Total, w.histRevs, w.histBytes, w.tombs, w.deleted)
			}
			if r.Estimates.Compaction.HistoryBytes != w.histBytes {
				t.Errorf("compaction would free %d bytes, want %d", r.Estimates.Compaction.HistoryBytes, w.histBytes)
			}
			if p := r.Estimates.PurgeGhosts; p.HistoryBytes != w.ghostHistory || w.ghostHistory == 0 {
				t.Errorf("purge estimate's history %d bytes, want %d", p.HistoryBytes, w.ghostHistory)
			}
			if len(r.MostRevisions) == 0 || r.MostRevisions[0].Key != "/registry/configmaps/kept/busy" || r.MostRevisions[0].Revisions != w.busyRevisions {
				t.Errorf("most revisions %+v, want kept/busy with %d", r.MostRevisions, w.busyRevisions)
			}
			secrets := group(r.Resources, "secrets")
			if secrets.Keys != 0 || secrets.HistoryRevisions != 2 || secrets.Tombstones != 1 {
				t.Errorf("secrets %+v, want the deleted secret's put and delete, no key", secrets)
			}
			p := r.Pages
			if p == nil || p.FileSize != r.File.Size || p.InUse <= 0 || p.InUse > p.FileSize || p.Fragmented != p.FileSize-p.InUse {
				t.Errorf("pages %+v of a file of %d bytes", p, r.File.Size)
			}
		})
	}
}
