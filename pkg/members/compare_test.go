package members

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// memStore is a keyspace in memory, in key order: what a member serves.
type memStore struct{ kvs []*mvccpb.KeyValue }

func (s memStore) Revision() int64 { return 100 }

func (s memStore) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	for _, kv := range s.kvs {
		if err := fn(kv); err != nil {
			return err
		}
	}
	return nil
}

func (s memStore) First(ctx context.Context, start, end string) (*mvccpb.KeyValue, error) {
	return nil, nil
}

func (s memStore) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) { return nil, nil }

// keyspace makes a member's keyspace of "key=value@mod" entries (create
// revision and version 1).
func keyspace(entries ...string) memStore {
	var s memStore
	for _, e := range entries {
		kv, at, _ := strings.Cut(e, "@")
		k, v, _ := strings.Cut(kv, "=")
		var mod int64
		fmt.Sscan(at, &mod)
		s.kvs = append(s.kvs, &mvccpb.KeyValue{Key: []byte(k), Value: []byte(v), CreateRevision: 1, ModRevision: mod, Version: 1})
	}
	sort.Slice(s.kvs, func(i, j int) bool { return string(s.kvs[i].Key) < string(s.kvs[j].Key) })
	return s
}

// compareInMemory merges the keyspaces as compareKeys does.
func compareInMemory(t *testing.T, mode string, maxKeys int, stores ...memStore) (*tally, int64) {
	t.Helper()
	names := make([]string, len(stores))
	for i := range names {
		names[i] = fmt.Sprintf("m%d", i)
	}
	var wg sync.WaitGroup
	curs := make([]*cursor, len(stores))
	for i, s := range stores {
		curs[i] = read(context.Background(), names[i], s, nil, &wg)
	}
	tl := newTally(mode, names, "/registry/", maxKeys)
	distinct, err := merge(curs, mode, func(key string, recs []*record) error {
		tl.add(key, recs)
		return nil
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return tl, distinct
}

// TestCompareKeys: the merge names exactly the keys that differ, how
// each member's copy differs from the majority's, groups them by member
// and kind with the revisions of the writes concerned, and groups the
// members by the copies they hold.
func TestCompareKeys(t *testing.T) {
	common := []string{"/registry/pods/default/a=A@10", "/registry/pods/default/b=B@11", "/registry/configmaps/kube-system/c=C@12", "/zzz/outside=Z@13"}
	with := func(extra ...string) []string { return append(slices.Clone(common), extra...) }
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(common), func(e string) bool {
			return slices.ContainsFunc(drop, func(d string) bool { return strings.HasPrefix(e, d+"=") })
		})
	}
	changed := func(key, to string) []string {
		out := slices.Clone(common)
		for i, e := range out {
			if strings.HasPrefix(e, key+"=") {
				_, at, _ := strings.Cut(e, "@")
				out[i] = key + "=" + to + "@" + at
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		mode    string
		members [][]string
		// keys are "key member:difference ..." for each differing key.
		keys []string
		// groups are "member difference keys first-last resources".
		groups    []string
		partition string
	}{
		{name: "all agree", mode: ModeRevision, members: [][]string{common, common, common}, partition: "m0,m1,m2"},
		{
			name: "one member lacks keys", mode: ModeRevision, members: [][]string{common, without("/registry/pods/default/a", "/registry/pods/default/b"), common},
			keys:      []string{"/registry/pods/default/a m1:missing", "/registry/pods/default/b m1:missing"},
			groups:    []string{"m1 missing 2 10-11 pods:2"},
			partition: "m0,m2 / m1",
		},
		{
			name: "one member holds a key more", mode: ModeRevision, members: [][]string{common, common, with("/registry/secrets/x/s=S@40")},
			keys:      []string{"/registry/secrets/x/s m2:extra"},
			groups:    []string{"m2 extra 1 40-40 secrets:1"},
			partition: "m0,m1 / m2",
		},
		{
			name: "one member holds another value", mode: ModeRevision, members: [][]string{changed("/zzz/outside", "bad"), common, common},
			keys:      []string{"/zzz/outside m0:value"},
			groups:    []string{"m0 value 1 13-13 (outside the prefix):1"},
			partition: "m1,m2 / m0",
		},
		{
			name: "one member holds the value at another revision", mode: ModeRevision,
			members:   [][]string{common, changed("/registry/pods/default/a", "A@99"), common},
			keys:      []string{"/registry/pods/default/a m1:revision"},
			groups:    []string{"m1 revision 1 10-10 pods:1"},
			partition: "m0,m2 / m1",
		},
		{
			name: "two members wrong differently", mode: ModeRevision,
			members:   [][]string{without("/registry/pods/default/a"), common, changed("/registry/configmaps/kube-system/c", "bad")},
			keys:      []string{"/registry/configmaps/kube-system/c m2:value", "/registry/pods/default/a m0:missing"},
			groups:    []string{"m0 missing 1 10-10 pods:1", "m2 value 1 12-12 configmaps:1"},
			partition: "m0 / m1 / m2",
		},
		{
			name: "no majority for a key", mode: ModeRevision,
			members:   [][]string{changed("/registry/pods/default/b", "x"), common, changed("/registry/pods/default/b", "y")},
			keys:      []string{"/registry/pods/default/b m0:no-majority m1:no-majority m2:no-majority"},
			groups:    []string{" no-majority 1 11-11 pods:1"},
			partition: "m0 / m1 / m2",
		},
		{
			name: "two members, one lacks a key", mode: ModeRevision, members: [][]string{common, without("/registry/pods/default/b")},
			keys:      []string{"/registry/pods/default/b m0:no-majority m1:no-majority"},
			groups:    []string{" no-majority 1 11-11 pods:1"},
			partition: "m0 / m1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stores := make([]memStore, len(tc.members))
			for i, m := range tc.members {
				stores[i] = keyspace(m...)
			}
			tl, distinct := compareInMemory(t, tc.mode, 100, stores...)
			var keys []string
			for _, d := range tl.keys {
				line := d.Key
				for _, s := range d.States {
					if s.Difference != "" {
						line += " " + s.Member + ":" + s.Difference
					}
				}
				keys = append(keys, line)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("keys:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(tc.keys, "\n"))
			}
			var groups []string
			for _, g := range tl.result() {
				var res []string
				for _, c := range g.Resources {
					res = append(res, fmt.Sprintf("%s:%d", c.Resource, c.Keys))
				}
				groups = append(groups, fmt.Sprintf("%s %s %d %d-%d %s", g.Member, g.Difference, g.Keys, g.FirstRevision, g.LastRevision, strings.Join(res, ",")))
			}
			slices.Sort(groups)
			if !slices.Equal(groups, tc.groups) {
				t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(groups, "\n"), strings.Join(tc.groups, "\n"))
			}
			if got := groupWords(tl.partition()); got != strings.ReplaceAll(tc.partition, ",", ", ") {
				t.Errorf("partition %q, want %q", got, tc.partition)
			}
			if tl.differ != int64(len(tc.keys)) {
				t.Errorf("differ %d, want %d", tl.differ, len(tc.keys))
			}
			if distinct < int64(len(common)) {
				t.Errorf("distinct %d, want at least %d", distinct, len(common))
			}
		})
	}
}

// TestRevisionsOnlyDiffer: the same values at other revisions on one
// member (its revisions diverged) are counted as such at a revision, and
// are no difference when the current values are compared.
func TestRevisionsOnlyDiffer(t *testing.T) {
	a := keyspace("/registry/pods/default/a=A@10", "/registry/pods/default/b=B@11")
	shifted := keyspace("/registry/pods/default/a=A@5", "/registry/pods/default/b=B@6")
	tl, _ := compareInMemory(t, ModeRevision, 100, a, shifted, a)
	if tl.revisionOnly != 2 || tl.differ != 2 {
		t.Errorf("at a revision: %d keys differ, %d by their revisions only; want 2 and 2", tl.differ, tl.revisionOnly)
	}
	if g := tl.result(); len(g) != 1 || g[0].Member != "m1" || g[0].Difference != RevisionDiffers {
		t.Errorf("groups %+v, want m1's revision differences", g)
	}
	tl, _ = compareInMemory(t, ModeCurrent, 100, a, shifted, a)
	if tl.differ != 0 {
		t.Errorf("current values: %d keys differ, want none", tl.differ)
	}
}

// TestListsAtMostMaxKeys: the keys beyond the limit are counted in their
// groups, not listed.
func TestListsAtMostMaxKeys(t *testing.T) {
	var all, some []string
	for i := 0; i < 50; i++ {
		e := fmt.Sprintf("/registry/pods/ns/p%02d=v@%d", i, 10+i)
		all = append(all, e)
		if i%2 == 0 {
			some = append(some, e)
		}
	}
	tl, distinct := compareInMemory(t, ModeRevision, 10, keyspace(all...), keyspace(some...), keyspace(all...))
	if distinct != 50 || tl.differ != 25 || len(tl.keys) != 10 || tl.unlisted != 15 {
		t.Errorf("distinct %d, differ %d, listed %d, unlisted %d; want 50, 25, 10, 15", distinct, tl.differ, len(tl.keys), tl.unlisted)
	}
	g := tl.result()
	if len(g) != 1 || g[0].Keys != 25 || g[0].FirstRevision != 11 || g[0].LastRevision != 59 {
		t.Errorf("groups %+v, want m1 missing 25 keys written between 11 and 59", g)
	}
}
