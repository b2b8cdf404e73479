package repair

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
)

// RestoreOptions configure RestoreWith.
type RestoreOptions struct {
	Pacing etcdwrite.Pacing
	// DryRun writes nothing and reports what would be written.
	DryRun bool
	// IntoRecreated writes keys whose namespace or CRD was created again
	// since the purge (the user asked for it: flagnames.IntoRecreated).
	IntoRecreated bool
	// Prefix is the registry prefix the witnesses of a key are worked out
	// under when the backup does not name one (a backup made from a logical
	// snapshot, or one written before backups recorded their prefix).
	Prefix string
	// Reader reads values whose fields restore's checks need (a claim and
	// its volume) when they are encrypted at rest (*objread.Reader); nil
	// reads them as stored.
	Reader ContentReader
	// Journal, if set, gets each key's outcome as its transaction returns
	// (protect.Writer.Journal: the audit log as it happens).
	Journal func(etcdwrite.Result)
}

// ContentReader reads the object stored under a key, decrypting it or
// asking the API server when it must (*objread.Reader).
type ContentReader interface {
	Read(ctx context.Context, key string, value []byte) (runtime.Object, error)
}

// witnessGuard is restore's counterpart of the purge's witness compares.
// A key the purge deleted rests on its witnesses: its namespace key, and
// for a custom resource its CRD key. The purge deleted it only while the
// witnesses in Entry.Absent were absent; a witness that exists now but did
// not exist then (or was created again since) belongs to another instance of
// that namespace or CRD, and the key is not written into it. Keys whose
// witnesses stand as they stood at the purge are written, each with its
// witnesses compared in the same transaction at the create revision read
// here (on kine, read just before).
type witnessGuard struct {
	b      *backup.Backup
	prefix string
	// since is the revision the purge judged the keyspace at: a witness
	// created after it was created after the purge looked.
	since int64
	into  bool
	// keys are each entry's witnesses.
	keys map[int][]string
	// read is each witness's create revision as read when planning (0:
	// absent), each witness read once; ours says it holds this backup's
	// own bytes for it.
	read map[string]int64
	ours map[string]bool
	// byKey is the backup's entries by key.
	byKey map[string]*backup.Entry
	// wrote is the revision each key this restore wrote back was written
	// at: a witness that is itself in the backup is compared at it.
	wrote map[string]int64
	// late holds the reason of a key refused at write time: a witness
	// created between the plan and the write.
	late map[int]string
}

// newWitnessGuard reads the witnesses of the entries in todo and marks those
// that are refused in results. It returns the guard and the entries left to
// write.
func newWitnessGuard(ctx context.Context, kv clientv3.KV, b *backup.Backup, o RestoreOptions, todo []int, results []etcdwrite.Result) (*witnessGuard, []int, error) {
	g := &witnessGuard{b: b, prefix: b.Prefix, since: b.ScanRevision, into: o.IntoRecreated,
		keys: map[int][]string{}, read: map[string]int64{}, ours: map[string]bool{}, byKey: map[string]*backup.Entry{},
		wrote: map[string]int64{}, late: map[int]string{}}
	for i := range b.Entries {
		g.byKey[b.Entries[i].Key] = &b.Entries[i]
	}
	if g.prefix == "" {
		g.prefix = o.Prefix
	}
	if g.since == 0 && b.Snapshot != nil {
		g.since = b.Snapshot.Revision
	}
	var kept []int
	for _, i := range todo {
		e := b.Entries[i]
		g.keys[i] = witnessKeys(g.prefix, e)
		gone, again, err := g.goneNeeds(ctx, kv, e)
		if err != nil {
			return nil, nil, err
		}
		if len(again) > 0 && len(gone) == 0 {
			if !g.into {
				results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: fmt.Sprintf("%s was created again since the backup: written back, the key would join a namespace or CustomResourceDefinition of that name it never belonged to; %s writes it there anyway",
					strings.Join(again, " and "), flagnames.IntoRecreated)}
				continue
			}
			results[i].Detail = "written into " + strings.Join(again, " and ") + ", created again since the backup, as " + flagnames.IntoRecreated + " asks"
		}
		if len(gone) > 0 {
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: fmt.Sprintf("%s existed when the backup was taken and %s gone now: written back, the key would be a ghost; it stays in the backup: create %s again, then restore with %s",
				strings.Join(gone, " and "), map[bool]string{true: "are", false: "is"}[len(gone) > 1], map[bool]string{true: "them", false: "it"}[len(gone) > 1], flagnames.IntoRecreated)}
			continue
		}
		var recreated, into, kinds []string
		for _, w := range g.keys[i] {
			if _, ok := g.read[w]; !ok {
				rev, ours, err := g.readWitness(ctx, kv, w)
				if err != nil {
					return nil, nil, err
				}
				g.read[w], g.ours[w] = rev, ours
			}
			rev := g.read[w]
			why := g.judge(e, w, rev, g.ours[w])
			if why == "" {
				continue
			}
			recreated = append(recreated, why)
			into = append(into, fmt.Sprintf("%s (create revision %d)", describeWitness(g.prefix, w), rev))
			if k := witnessKind(g.prefix, w); !contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		switch {
		case len(recreated) == 0:
		case g.into:
			results[i].Detail = "written into " + strings.Join(into, " and ") + ", created again since the purge, as " + flagnames.IntoRecreated + " asks"
		default:
			verb := "was"
			if len(recreated) > 1 {
				verb = "were"
			}
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: fmt.Sprintf("%s %s created again since the purge: written back, the key would join a %s of that name it never belonged to; %s writes it there anyway",
				strings.Join(recreated, " and "), verb, strings.Join(kinds, " and "), flagnames.IntoRecreated)}
			continue
		}
		kept = append(kept, i)
	}
	return g, kept, nil
}

// witnessesFirst orders todo so that the entries other entries need (their
// namespace, their CustomResourceDefinition) are written first, the rest
// in the backup's order: a restore that stops between two transactions
// never leaves a key without what it needs.
func (g *witnessGuard) witnessesFirst(todo []int) []int {
	needed := map[string]bool{}
	for _, i := range todo {
		for _, w := range g.keys[i] {
			needed[w] = true
		}
		for _, n := range g.b.NeedsOf(g.b.Entries[i]) {
			needed[n.Key] = true
		}
	}
	out := make([]int, 0, len(todo))
	for _, first := range []bool{true, false} {
		for _, i := range todo {
			if needed[g.b.Entries[i].Key] == first {
				out = append(out, i)
			}
		}
	}
	return out
}

// goneNeeds names what entry e needs (backup.NeedsOf) that is absent now
// and that this backup does not bring back, and what was created again
// since the backup (another create revision than the one recorded). A
// need the backup holds itself (the namespace unstick rewrote) is
// compared too: absent, the restore writes it back first; present at
// another create revision, without this backup's bytes, it is another
// instance of that name (GitOps created the namespace again), and the
// keys that needed the old one must not go into it.
func (g *witnessGuard) goneNeeds(ctx context.Context, kv clientv3.KV, e backup.Entry) (gone, recreated []string, err error) {
	for _, n := range g.b.NeedsOf(e) {
		if _, ok := g.read[n.Key]; !ok {
			rev, ours, err := g.readWitness(ctx, kv, n.Key)
			if err != nil {
				return nil, nil, err
			}
			g.read[n.Key], g.ours[n.Key] = rev, ours
		}
		_, held := g.byKey[n.Key]
		switch rev := g.read[n.Key]; {
		case held && (rev == 0 || g.ours[n.Key]):
			// Written back by this restore (first), or an earlier one.
		case rev == 0:
			gone = append(gone, describeWitness(g.prefix, n.Key))
		case n.CreateRevision != 0 && rev != n.CreateRevision:
			recreated = append(recreated, fmt.Sprintf("%s (%s, create revision %d; %d when the backup was taken)", describeWitness(g.prefix, n.Key), n.Key, rev, n.CreateRevision))
		}
	}
	return gone, recreated, nil
}

// readWitness reads a witness key: its create revision (0 when absent) and
// whether it holds the bytes of this backup's entry for it (written back by
// an earlier restore: the instance the purge saw).
func (g *witnessGuard) readWitness(ctx context.Context, kv clientv3.KV, key string) (int64, bool, error) {
	resp, err := kv.Get(ctx, key)
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, false, nil
	}
	e, ok := g.byKey[key]
	return resp.Kvs[0].CreateRevision, ok && bytes.Equal(e.Value, resp.Kvs[0].Value), nil
}

// judge says how witness w, existing at create revision rev, was created
// again since the purge, so that e must not be written, or "" when it may. An absent witness puts the key back as it
// was when the purge deleted it (the undo); so does one that existed at the
// purge, or one holding this backup's own bytes for it.
func (g *witnessGuard) judge(e backup.Entry, w string, rev int64, ours bool) string {
	if rev == 0 || ours {
		return ""
	}
	what := describeWitness(g.prefix, w)
	if contains(e.Absent, w) {
		return fmt.Sprintf("%s (%s, create revision %d; absent when the purge deleted this key)", what, w, rev)
	}
	if g.since > 0 && rev > g.since {
		return fmt.Sprintf("%s (%s, create revision %d, after the purge's revision %d)", what, w, rev, g.since)
	}
	return ""
}

// cmps are the compares that keep entry i's witnesses as they were judged:
// each at the create revision read when planning, or, for a witness this
// restore has written itself, at the revision it wrote it.
func (g *witnessGuard) cmps(i int) []clientv3.Cmp {
	var out []clientv3.Cmp
	for _, w := range g.keys[i] {
		out = append(out, clientv3.Compare(clientv3.CreateRevision(w), "=", g.expected(w)))
	}
	return out
}

// expected is the create revision witness w must have when a key resting
// on it is written.
func (g *witnessGuard) expected(w string) int64 {
	if rev, ok := g.wrote[w]; ok {
		return rev
	}
	return g.read[w]
}

// written records that entry i was written at revision rev: keys resting on
// it compare it at that revision from now on.
func (g *witnessGuard) written(i int, rev int64) {
	g.wrote[g.b.Entries[i].Key] = rev
}

// changed reads entry i's witnesses again and says which was created (or
// created again) since it was judged, or "" when none was.
func (g *witnessGuard) changed(ctx context.Context, kv clientv3.KV, i int) (string, error) {
	for _, w := range g.keys[i] {
		resp, err := kv.Get(ctx, w)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", w, err)
		}
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].CreateRevision
		}
		if want := g.expected(w); rev != want {
			now := "deleted"
			if rev != 0 {
				now = fmt.Sprintf("created again (create revision %d)", rev)
			}
			return fmt.Sprintf("%s was %s during the restore (%s); left alone: run restore again to judge it anew (%s writes it into a namespace or CRD created since the purge)", describeWitness(g.prefix, w), now, w, flagnames.IntoRecreated), nil
		}
	}
	return "", nil
}

// witnessKeys returns the keys e rests on: every key the purge compared
// absent when it deleted e (Entry.Absent), and, worked out from e's key
// under prefix (for backups that recorded none), its namespace key when it
// is namespaced and its CRD key when it is a custom resource.
func witnessKeys(prefix string, e backup.Entry) []string {
	keys := append([]string(nil), e.Absent...)
	add := func(k string) {
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, w := range backup.Witnesses(prefix, e.Key) {
		add(w)
	}
	return keys
}

// witnessKind is what a witness key stores: "namespace",
// "CustomResourceDefinition", or "key".
func witnessKind(prefix, key string) string {
	kind, _, _ := strings.Cut(describeWitness(prefix, key), " ")
	return kind
}

// describeWitness names what a witness key stores: "namespace kb-system",
// "CustomResourceDefinition widgets.example.com", or the key itself.
func describeWitness(prefix, key string) string {
	if i := strings.LastIndex(key, "/namespaces/"); i >= 0 && (prefix == "" || i+1 == len(prefix)) {
		return "namespace " + key[i+len("/namespaces/"):]
	}
	const crds = "/apiextensions.k8s.io/customresourcedefinitions/"
	if i := strings.LastIndex(key, crds); i >= 0 && (prefix == "" || i+1 == len(prefix)) {
		return "CustomResourceDefinition " + key[i+len(crds):]
	}
	return "key " + key
}
