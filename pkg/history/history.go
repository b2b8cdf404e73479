package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// History is what etcd (or a db file) still holds of a selection's past.
type History struct {
	Selection Selection `json:"selection"`
	// Source says what was read: "etcd" or the db file's path.
	Source string `json:"source"`
	// From is the first revision asked for (0: the earliest held).
	From int64 `json:"from"`
	// Start is the first revision read: From, or the compacted revision
	// when From is older.
	Start int64 `json:"start"`
	// Revision is the newest revision read: etcd's when the history was
	// read, or the file's.
	Revision int64 `json:"revision"`
	// CompactRevision is where the history begins when it was compacted
	// (0: not compacted, or not known because From is later): no revision
	// before it can be read, only each key's newest at it.
	CompactRevision int64 `json:"compactRevision,omitempty"`
	// Compacted is set when From (or the default, the first revision) was
	// older than CompactRevision.
	Compacted bool `json:"compacted"`
	// Events are the revisions of the selected keys, in revision order.
	Events []Event `json:"events"`
	// Keys is how many keys they are of.
	Keys int `json:"keys"`
	// NamespaceDeletes are, for a namespace, the revisions its key was
	// deleted at, each with the objects still in it.
	NamespaceDeletes []NamespaceDelete `json:"namespaceDeletes,omitempty"`
}

// Event types.
const (
	Created = "create"
	Updated = "update"
	Deleted = "delete"
)

// Event is one revision of one key.
type Event struct {
	Key       string `json:"key"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Type is create (the key's version 1), update or delete.
	Type string `json:"type"`
	// Revision is the revision of the write (mod revision), or of the
	// delete; CreateRevision and Version are etcd's for a write.
	Revision       int64 `json:"revision"`
	CreateRevision int64 `json:"createRevision,omitempty"`
	Version        int64 `json:"version,omitempty"`
	// Size is the value's size in bytes, SHA256 the first 16 hex digits of
	// its sha256 (a write).
	Size   int    `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Object is what the value says of the object (a write), when it could
	// be read; Unreadable says why not.
	Object     *Fields `json:"object,omitempty"`
	Unreadable string  `json:"unreadable,omitempty"`
	// Changes say what changed since the key's previous revision.
	Changes []string `json:"changes"`
}

// Fields are the object's fields a history follows.
type Fields struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	UID        string `json:"uid,omitempty"`
	// ResourceVersion is what kube-apiserver serves: the stored one when the
	// value holds one, else the write's revision.
	ResourceVersion   string     `json:"resourceVersion"`
	Generation        int64      `json:"generation,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string   `json:"finalizers,omitempty"`
}

// NamespaceDelete is the moment a namespace's key was deleted.
type NamespaceDelete struct {
	Namespace string `json:"namespace"`
	Revision  int64  `json:"revision"`
	// Left are the objects still in the namespace once its key was gone:
	// ghosts from that revision on (until deleted or the namespace is
	// created again).
	Left []Object `json:"left"`
	// Unknown says why Left could not be read.
	Unknown string `json:"unknown,omitempty"`
	// RecreatedAt is the revision the namespace's key was written again, 0
	// if it was not.
	RecreatedAt int64 `json:"recreatedAt,omitempty"`
}

// Object is one key left in a deleted namespace.
type Object struct {
	Key            string `json:"key"`
	Resource       string `json:"resource"`
	Name           string `json:"name"`
	CreateRevision int64  `json:"createRevision"`
	ModRevision    int64  `json:"modRevision"`
}

// Decoder reads the metadata of the value stored under key (decrypting it
// when it can); decrypt.DecodeMeta is one.
type Decoder func(ctx context.Context, key string, value []byte) (*decode.Object, error)

// Options say how a history is read.
type Options struct {
	// From is the first revision to report (0: the earliest held).
	From int64
	// Decode reads each written value's metadata; nil reads none (size and
	// sha256 only).
	Decode Decoder
}

// raw is one revision as read: a write (KV) or a delete (Tombstone, KV
// holding the key), with the key's previous value when known (a live
// watch's PrevKV).
type raw struct {
	rev       int64
	tombstone bool
	kv        *mvccpb.KeyValue
	prev      *mvccpb.KeyValue
}

// builder turns revisions, in revision order, into a History.
type builder struct {
	h    *History
	sel  Selection
	opts Options
	// last is each key's newest event, for what changed.
	last map[string]*Event
	// alive are the selected keys alive now (a namespace's objects),
	// from every revision read.
	alive map[string]Object
	// pending is a namespace delete waiting for the end of its revision
	// (a transaction may delete more at the same revision).
	pending *NamespaceDelete
	// aliveAt, when set, reads the objects alive at a revision instead of
	// alive (a live watch starts after they were written).
	aliveAt func(ctx context.Context, rev int64) ([]Object, error)
}

func newBuilder(h *History, o Options) *builder {
	return &builder{h: h, sel: h.Selection, opts: o, last: map[string]*Event{}, alive: map[string]Object{}}
}

// add takes the next revision.
func (b *builder) add(ctx context.Context, r raw) error {
	if b.pending != nil && r.rev > b.pending.Revision {
		if err := b.settle(ctx); err != nil {
			return err
		}
	}
	key := string(r.kv.Key)
	ev := Event{Key: key, Revision: r.rev}
	if k, err := etcdscan.ParseKey(b.sel.Registry, key); err == nil {
		ev.Resource, ev.Namespace, ev.Name = k.Prefix, k.Namespace, k.Name
	}
	prev := b.last[key]
	if prev == nil && r.prev != nil {
		p := b.write(ctx, key, r.prev)
		prev = &p
	}
	nsKey := key == b.sel.NamespaceKey()
	if r.tombstone {
		ev.Type = Deleted
		delete(b.alive, key)
		if nsKey {
			b.pending = &NamespaceDelete{Namespace: b.sel.Namespace, Revision: r.rev, Left: []Object{}}
		}
	} else {
		ev = b.write(ctx, key, r.kv)
		if nsKey {
			b.recreated(r.rev)
		} else {
			b.alive[key] = Object{Key: key, Resource: ev.Resource, Name: ev.Name, CreateRevision: r.kv.CreateRevision, ModRevision: r.rev}
		}
	}
	ev.Changes = changes(prev, &ev, b.h.CompactRevision)
	b.last[key] = &ev
	if r.rev >= b.opts.From {
		b.h.Events = append(b.h.Events, ev)
	}
	return nil
}

// write is the event of a value written.
func (b *builder) write(ctx context.Context, key string, kv *mvccpb.KeyValue) Event {
	ev := Event{Key: key, Type: Updated, Revision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version,
		Size: len(kv.Value), SHA256: hash(kv.Value)}
	if k, err := etcdscan.ParseKey(b.sel.Registry, key); err == nil {
		ev.Resource, ev.Namespace, ev.Name = k.Prefix, k.Namespace, k.Name
	}
	// kine reports version 0 for every write: its create is the write
	// whose create and mod revisions are the same.
	if kv.Version == 1 || kv.CreateRevision == kv.ModRevision {
		ev.Type = Created
	}
	if b.opts.Decode == nil {
		ev.Unreadable = "not decoded"
		return ev
	}
	obj, err := b.opts.Decode(ctx, key, kv.Value)
	if err != nil {
		ev.Unreadable = oneLine(err)
		return ev
	}
	f := &Fields{APIVersion: obj.APIVersion, Kind: obj.Kind, UID: string(obj.Meta.UID), ResourceVersion: obj.Meta.ResourceVersion,
		Generation: obj.Meta.Generation, Finalizers: obj.Meta.Finalizers}
	if f.ResourceVersion == "" {
		f.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	}
	if t := obj.Meta.DeletionTimestamp; t != nil {
		u := t.UTC()
		f.DeletionTimestamp = &u
	}
	ev.Object = f
	return ev
}

// recreated marks the latest namespace delete as followed by a create.
func (b *builder) recreated(rev int64) {
	if n := len(b.h.NamespaceDeletes); n > 0 && b.h.NamespaceDeletes[n-1].RecreatedAt == 0 {
		b.h.NamespaceDeletes[n-1].RecreatedAt = rev
	}
}

// settle records the pending namespace delete with the objects alive at
// the end of its revision.
func (b *builder) settle(ctx context.Context) error {
	d := b.pending
	b.pending = nil
	if d.Revision < b.opts.From {
		return nil
	}
	if b.aliveAt != nil {
		left, err := b.aliveAt(ctx, d.Revision)
		if err != nil {
			d.Unknown = oneLine(err)
		}
		d.Left = append(d.Left, left...)
	} else {
		for _, o := range b.alive {
			d.Left = append(d.Left, o)
		}
	}
	sort.Slice(d.Left, func(i, j int) bool { return d.Left[i].Key < d.Left[j].Key })
	b.h.NamespaceDeletes = append(b.h.NamespaceDeletes, *d)
	return nil
}

// finish settles what is pending and counts the keys.
func (b *builder) finish(ctx context.Context) error {
	if b.pending != nil {
		if err := b.settle(ctx); err != nil {
			return err
		}
	}
	keys := map[string]bool{}
	for _, e := range b.h.Events {
		keys[e.Key] = true
	}
	b.h.Keys = len(keys)
	if b.h.Events == nil {
		b.h.Events = []Event{}
	}
	return nil
}

// changes says what changed from prev (nil: not known) to ev.
func changes(prev, ev *Event, compacted int64) []string {
	switch {
	case ev.Type == Deleted:
		if prev != nil && prev.Object != nil && len(prev.Object.Finalizers) > 0 {
			return []string{"deleted with finalizers " + strings.Join(prev.Object.Finalizers, ",") + " still set"}
		}
		return []string{"deleted"}
	case prev != nil && prev.Type == Deleted:
		return []string{"created again after its delete at " + strconv.FormatInt(prev.Revision, 10)}
	case ev.Type == Created:
		return []string{"created"}
	case prev == nil:
		s := "earliest revision held"
		if compacted > 0 {
			s += fmt.Sprintf(" (compacted at %d)", compacted)
		}
		return []string{s}
	}
	var out []string
	a, c := prev.Object, ev.Object
	switch {
	case a != nil && c != nil:
		if a.UID != c.UID {
			out = append(out, fmt.Sprintf("uid %s -> %s", a.UID, c.UID))
		}
		if a.Generation != c.Generation {
			out = append(out, fmt.Sprintf("generation %d -> %d", a.Generation, c.Generation))
		}
		switch {
		case a.DeletionTimestamp == nil && c.DeletionTimestamp != nil:
			out = append(out, "deletionTimestamp set "+c.DeletionTimestamp.Format(time.RFC3339))
		case a.DeletionTimestamp != nil && c.DeletionTimestamp == nil:
			out = append(out, "deletionTimestamp cleared")
		}
		var added, removed []string
		for _, f := range c.Finalizers {
			if !slices.Contains(a.Finalizers, f) {
				added = append(added, "+"+f)
			}
		}
		for _, f := range a.Finalizers {
			if !slices.Contains(c.Finalizers, f) {
				removed = append(removed, "-"+f)
			}
		}
		if len(added)+len(removed) > 0 {
			out = append(out, "finalizers "+strings.Join(append(added, removed...), " "))
		}
	case c == nil:
		out = append(out, "fields unknown: "+ev.Unreadable)
	}
	switch {
	case prev.SHA256 == ev.SHA256:
		out = append(out, "same bytes written again")
	case prev.Size != ev.Size:
		out = append(out, fmt.Sprintf("size %d -> %d", prev.Size, ev.Size))
	case len(out) == 0:
		out = append(out, "value changed, same size")
	}
	return out
}

// hash is the first 16 hex digits of a value's sha256.
func hash(v []byte) string {
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:8])
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
