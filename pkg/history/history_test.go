package history

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
)

func metaDecoder(ctx context.Context, key string, value []byte) (*decode.Object, error) {
	return decrypt.DecodeMeta(ctx, nil, "/registry/", key, value)
}

func obj(kind, ns, name, uid string, gen int, finalizers string, deleting bool) string {
	meta := fmt.Sprintf(`"name":%q,"namespace":%q,"uid":%q,"generation":%d`, name, ns, uid, gen)
	if finalizers != "" {
		meta += fmt.Sprintf(`,"finalizers":[%q]`, finalizers)
	}
	if deleting {
		meta += `,"deletionTimestamp":"2026-12-03T10:00:00Z"`
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{%s}}`, kind, meta)
}

// TestNamespaceHistory: a namespace whose key is force-deleted while its
// pods, configmap, secret and custom resource stay reads back, live and from
// a snapshot, as the same revisions, with the delete's moment naming exactly
// the objects left; a namespace whose name starts the same is not in it; a
// finalizer, a deletionTimestamp, a generation and an encrypted value are
// each said; a compaction is said, and a key never written has no history.
func TestNamespaceHistory(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	rev := func() int64 {
		r, err := cli.Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	put := func(k, v string) int64 {
		t.Helper()
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		return rev()
	}
	del := func(k string) int64 {
		t.Helper()
		if _, err := cli.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		return rev()
	}
	// Before the compaction.
	put("/registry/pods/old/x", "old")
	put("/registry/namespaces/kb", obj("Namespace", "", "kb", "ns-uid", 0, "kubernetes", false))
	put("/registry/pods/kb/gone", obj("Pod", "kb", "gone", "u0", 1, "", false))
	compacted := put("/registry/pods/kb/p1", obj("Pod", "kb", "p1", "u1", 1, "", false))
	if _, err := cli.Compact(ctx, compacted); err != nil {
		t.Fatal(err)
	}
	put("/registry/configmaps/kb/cm1", obj("ConfigMap", "kb", "cm1", "u2", 0, "", false))
	put("/registry/secrets/kb/s1", "k8s:enc:aescbc:v1:key1:\x01\x02\x03secret")
	put("/registry/example.com/widgets/kb/w1", obj("Widget", "kb", "w1", "u3", 1, "", false))
	put("/registry/pods/kb2/p1", obj("Pod", "kb2", "p1", "u9", 1, "", false))
	put("/registry/pods/kb/p1", obj("Pod", "kb", "p1", "u1", 2, "example.com/hold", false))
	put("/registry/pods/kb/p1", obj("Pod", "kb", "p1", "u1", 2, "example.com/hold", true))
	del("/registry/pods/kb/gone")
	nsDeleted := del("/registry/namespaces/kb")
	put("/registry/configmaps/kb/cm1", obj("ConfigMap", "kb", "cm1", "u2", 0, "", false)+" ")
	end := put("/registry/pods/elsewhere/y", "y")

	path := filepath.Join(t.TempDir(), "snap.db")
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: []string{ep}}, path); err != nil {
		t.Fatal(err)
	}
	f, err := dbfile.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sel := Selection{Registry: "/registry/", Namespace: "kb"}
	o := Options{Decode: metaDecoder}
	live, err := FromEtcd(ctx, cli, sel, o)
	if err != nil {
		t.Fatal(err)
	}
	file, err := FromFile(ctx, f, sel, o)
	if err != nil {
		t.Fatal(err)
	}
	wantLeft := "/registry/configmaps/kb/cm1 /registry/example.com/widgets/kb/w1 /registry/pods/kb/p1 /registry/secrets/kb/s1"
	for name, h := range map[string]*History{"live": live, "file": file} {
		t.Run(name, func(t *testing.T) {
			if !h.Compacted || h.CompactRevision != compacted || h.Revision < end {
				t.Errorf("compacted %v at %d, revision %d; want at %d, revision %d", h.Compacted, h.CompactRevision, h.Revision, compacted, end)
			}
			if len(h.NamespaceDeletes) != 1 {
				t.Fatalf("namespace deletes %+v", h.NamespaceDeletes)
			}
			d := h.NamespaceDeletes[0]
			var left []string
			for _, o := range d.Left {
				left = append(left, o.Key)
			}
			if d.Revision != nsDeleted || strings.Join(left, " ") != wantLeft || d.Unknown != "" {
				t.Errorf("delete at %d (want %d), left %v, unknown %q", d.Revision, nsDeleted, left, d.Unknown)
			}
			byKey := map[string][]string{}
			for _, e := range h.Events {
				if strings.Contains(e.Key, "kb2") || strings.Contains(e.Key, "elsewhere") || strings.Contains(e.Key, "old") {
					t.Errorf("%s is not in namespace kb", e.Key)
				}
				byKey[e.Key] = append(byKey[e.Key], e.Type+": "+strings.Join(e.Changes, "; "))
			}
			p1 := strings.Join(byKey["/registry/pods/kb/p1"], " | ")
			for _, want := range []string{"generation 1 -> 2", "finalizers +example.com/hold", "deletionTimestamp set 2026-12-03T10:00:00Z"} {
				if !strings.Contains(p1, want) {
					t.Errorf("p1: %s\nwant %q", p1, want)
				}
			}
			if got := strings.Join(byKey["/registry/pods/kb/gone"], " | "); got != "create: created | delete: deleted" {
				t.Errorf("gone: %s", got)
			}
			if got := strings.Join(byKey["/registry/namespaces/kb"], " | "); got != "create: created | delete: deleted with finalizers kubernetes still set" {
				t.Errorf("namespace: %s", got)
			}
			s1 := h.Events[0]
			for _, e := range h.Events {
				if e.Key == "/registry/secrets/kb/s1" {
					s1 = e
				}
			}
			if s1.Object != nil || !strings.Contains(s1.Unreadable, "encrypted at rest") || s1.Size == 0 || s1.SHA256 == "" {
				t.Errorf("encrypted secret: %+v", s1)
			}
			if got := byKey["/registry/configmaps/kb/cm1"]; len(got) != 2 || !strings.HasPrefix(got[1], "update: size ") {
				t.Errorf("cm1: %v", got)
			}
		})
	}
	// The same events, in the same order, live and from the file; the
	// file's first revision of p1 is the one kept at the compaction, which
	// the watch (from the compacted revision) sees too.
	if len(live.Events) != len(file.Events) {
		t.Errorf("live %d events, file %d", len(live.Events), len(file.Events))
	}
	for i := range min(len(live.Events), len(file.Events)) {
		l, f := live.Events[i], file.Events[i]
		if l.Key != f.Key || l.Revision != f.Revision || l.Type != f.Type || l.SHA256 != f.SHA256 {
			t.Errorf("event %d: live %s %d %s, file %s %d %s", i, l.Key, l.Revision, l.Type, f.Key, f.Revision, f.Type)
		}
	}

	t.Run("a key never written", func(t *testing.T) {
		sel := Selection{Registry: "/registry/", Key: "/registry/pods/kb/never"}
		for name, read := range map[string]func() (*History, error){
			"live": func() (*History, error) { return FromEtcd(ctx, cli, sel, o) },
			"file": func() (*History, error) { return FromFile(ctx, f, sel, o) },
		} {
			h, err := read()
			if err != nil || len(h.Events) != 0 || h.Keys != 0 {
				t.Errorf("%s: %v %+v", name, err, h)
			}
		}
	})
	t.Run("from a later revision", func(t *testing.T) {
		sel := Selection{Registry: "/registry/", Prefix: "/registry/pods/kb/"}
		h, err := FromEtcd(ctx, cli, sel, Options{From: nsDeleted - 1})
		if err != nil {
			t.Fatal(err)
		}
		if h.Compacted || len(h.Events) != 1 || h.Events[0].Key != "/registry/pods/kb/gone" || h.Events[0].Type != Deleted {
			t.Errorf("%+v", h)
		}
	})
}
