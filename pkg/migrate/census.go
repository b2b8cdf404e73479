package migrate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Object is one stored object the census names.
type Object struct {
	Key       string    `json:"key"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
	// ModRevision is the revision its value was written at.
	ModRevision int64 `json:"modRevision"`
	// StoredAs is the apiVersion it is stored at ("" when unreadable).
	StoredAs string `json:"storedAs,omitempty"`
	// StoredWith is how it is encrypted at rest: "aescbc/key1", "identity".
	StoredWith string `json:"storedWith"`
	// Why says why it is rewritten, or why it cannot be read.
	Why string `json:"why"`
}

// Census is what etcd holds of one resource at one revision: the objects
// per stored version and per encryption provider and key, and the objects a
// rewrite through the API server moves to the storage version and the key
// that writes.
type Census struct {
	Target   Target `json:"-"`
	Resource string `json:"resource"`
	Revision int64  `json:"revision"`
	Objects  int    `json:"objects"`
	// StorageVersion is the CRD's storage version, or the group/version
	// the API server stores a built-in resource at ("" when not asked).
	StorageVersion string `json:"storageVersion,omitempty"`
	// TargetRelease is the release whose decoding judged a built-in
	// resource's objects (--target-release).
	TargetRelease string `json:"targetRelease,omitempty"`
	// Writer is the provider and key that write the resource ("" when no
	// EncryptionConfiguration was given: encryption is only counted).
	Writer string `json:"writer,omitempty"`
	// WriterKeyID is the key ID the KMS v2 plugin that writes encrypts
	// with now, as the plugin says: Writer then names it ("kms v2/vault
	// (key ID 7)"), and an object under another key ID of that plugin is
	// rewritten (the API server's next write of it moves it).
	WriterKeyID string `json:"writerKeyID,omitempty"`
	// KeyIDUnread says why the key IDs under the KMS v2 plugin that writes
	// were not judged (the plugin did not answer).
	KeyIDUnread string `json:"keyIDUnread,omitempty"`
	// Readers are every provider and key the configuration reads it with.
	Readers []string `json:"readers,omitempty"`
	// ReadBy names, for each of Readers, the resources it reads.
	ReadBy map[string][]string `json:"readBy,omitempty"`
	// NotChecked are objects under a KMS provider: the API server reads
	// them through its plugin, so they are judged by provider alone; the
	// version they are stored at (and a KMS v2 key ID) is not read here.
	NotChecked int            `json:"notChecked,omitempty"`
	ByVersion  map[string]int `json:"byVersion"`
	ByKey      map[string]int `json:"byKey"`
	// Rewrite are the objects not at the storage version or not under the
	// key that writes, in key order.
	Rewrite []Object `json:"rewrite"`
	// Unreadable are objects nobody here can read (a key the configuration
	// does not hold, a KMS value, a value that does not decode).
	Unreadable []Object `json:"unreadable"`
	// Stuck are objects the release to upgrade to cannot read, where no
	// rewrite through the running API server moves them (it stores them
	// at a version that release does not decode either).
	Stuck []Object `json:"stuck,omitempty"`
}

// The ways out of an object no rewrite can move.
const (
	wayOutEncrypted = "give the EncryptionConfiguration that holds its key; if that key is lost, the object is too: remove it with " +
		"`regghost purge` (encrypted-unknown, behind a backup) or kube-apiserver's unsafe deletion of corrupt objects (KEP-3926)"
	wayOutUndecodable = "`regghost get` shows its bytes; remove it with `regghost purge` (undecodable, behind a backup) " +
		"or kube-apiserver's unsafe deletion of corrupt objects (KEP-3926)"
)

// Left is how many objects are still to move, cannot be read, or cannot be
// moved where the release to upgrade to reads them.
func (c *Census) Left() int { return len(c.Rewrite) + len(c.Unreadable) + len(c.Stuck) }

// IfMoved is the census as it would be once every object the rewrite
// names moved: what a plan shows it leads to.
func (c *Census) IfMoved() *Census {
	moved := *c
	moved.Rewrite, moved.Unreadable, moved.Stuck = nil, nil, nil
	moved.ByVersion = map[string]int{}
	if c.Target.StorageVersion() != "" {
		moved.ByVersion[c.Target.Resource.WithVersion(c.Target.Version).GroupVersion().String()] = c.Objects - c.NotChecked
	} else if b := c.Target.Builtin; b != nil && b.Stored.Storage != "" {
		moved.ByVersion = map[string]int{b.Stored.Storage: c.Objects - c.NotChecked}
	}
	return &moved
}

// AtVersion counts the objects stored at version v of the target's group.
func (c *Census) AtVersion(v string) int {
	return c.ByVersion[schema.GroupVersion{Group: c.Target.Resource.Group, Version: v}.String()]
}

// Take counts every object of t stored in store (under registry), reading
// encrypted values with dec (nil: encryption is only counted). Only a live
// etcd store (*etcdscan.EtcdStore) asks a KMS v2 plugin its key ID; a copy
// of etcd leaves the key IDs unjudged, with why.
func Take(ctx context.Context, store etcdscan.Store, registry string, t Target, dec *decrypt.Decrypter) (*Census, error) {
	c := &Census{Target: t, Resource: t.Resource.String(), Revision: store.Revision(), StorageVersion: t.StorageVersion(),
		ByVersion: map[string]int{}, ByKey: map[string]int{}, Rewrite: []Object{}, Unreadable: []Object{}}
	if dec != nil {
		c.Writer, c.Readers = dec.Writer(t.Resource), dec.Readers(t.Resource)
		c.ReadBy = map[string][]string{}
		for _, k := range c.Readers {
			c.ReadBy[k] = dec.ReadBy(k)
		}
		if strings.HasPrefix(c.Writer, "kms v2/") {
			// A key in the KMS serves every plugin at the same endpoint.
			for _, p := range dec.SameEndpoint(c.Writer) {
				for _, r := range dec.ReadBy(p) {
					if !slices.Contains(c.ReadBy[c.Writer], r) {
						c.ReadBy[c.Writer] = append(c.ReadBy[c.Writer], r)
					}
				}
			}
			if _, live := store.(*etcdscan.EtcdStore); !live {
				// A copy of etcd (--db) is judged by what it holds, never
				// against the key ID the plugin writes with today.
				c.KeyIDUnread = "the KMS plugin is not asked offline (--db): a copy of etcd is not judged against today's key ID"
			} else if id, err := dec.CurrentKeyID(ctx, c.Writer); err != nil {
				c.KeyIDUnread = err.Error()
			} else {
				c.WriterKeyID, c.Writer = id, etcdscan.WithKeyID(c.Writer, id)
			}
		}
	}
	start := registry + t.Prefix + "/"
	err := store.Range(ctx, start, clientv3.GetPrefixRangeEnd(start), false, func(kv *mvccpb.KeyValue) error {
		c.add(ctx, registry, dec, kv)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s at revision %d: %w", start, store.Revision(), err)
	}
	sort.Slice(c.Rewrite, func(i, j int) bool { return c.Rewrite[i].Key < c.Rewrite[j].Key })
	return c, nil
}

// add judges one stored value.
func (c *Census) add(ctx context.Context, registry string, dec *decrypt.Decrypter, kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	k, err := etcdscan.ParseKey(registry, key)
	if err != nil || k.Prefix != c.Target.Prefix {
		return // a deeper prefix sharing this one's first segments
	}
	c.Objects++
	with, kerr := c.under(kv.Value)
	o := Object{Key: key, Namespace: k.Namespace, Name: k.Name, ModRevision: kv.ModRevision, StoredWith: with}
	c.ByKey[o.StoredWith]++
	if dec != nil && strings.HasPrefix(o.StoredWith, "kms ") {
		// The API server reads it through its KMS plugin; here only the
		// provider (and a KMS v2 key ID) can be judged, not the stored
		// version.
		c.NotChecked++
		if kerr != nil {
			o.Why = kerr.Error() + ". Way out: " + wayOutUndecodable
			c.Unreadable = append(c.Unreadable, o)
			return
		}
		if b := c.Target.Builtin; b != nil && etcdscan.Plugin(o.StoredWith) == etcdscan.Plugin(c.Writer) {
			if why := b.judgeKMS(); why != "" {
				st := o
				st.Why = why
				c.Stuck = append(c.Stuck, st)
				return
			}
		}
		if o.StoredWith != c.Writer && slices.Contains(c.Readers, etcdscan.Plugin(o.StoredWith)) {
			o.Why = fmt.Sprintf("under %s, not %s", o.StoredWith, c.Writer)
			c.Rewrite = append(c.Rewrite, o)
		} else if o.StoredWith != c.Writer {
			o.Why = fmt.Sprintf("under %s, which %s does not list. Way out: %s", o.StoredWith, dec.Path, wayOutEncrypted)
			c.Unreadable = append(c.Unreadable, o)
		}
		return
	}
	plain, stale := kv.Value, false
	if dec != nil {
		plain, stale, err = dec.Open(ctx, key, c.Target.Resource, kv.Value)
	} else if o.StoredWith != decrypt.Identity {
		err = fmt.Errorf("encrypted at rest (%s): give --encryption-provider-config to read it", o.StoredWith)
	}
	if err != nil {
		o.Why = err.Error() + ". Way out: " + wayOutEncrypted
		c.Unreadable = append(c.Unreadable, o)
		return
	}
	meta, err := decode.Meta(plain)
	if err != nil {
		o.Why = fmt.Sprintf("does not decode: %v. Way out: %s", err, wayOutUndecodable)
		c.Unreadable = append(c.Unreadable, o)
		return
	}
	o.StoredAs, o.UID = meta.APIVersion, meta.Meta.UID
	c.ByVersion[o.StoredAs]++
	var why []string
	if sv := c.Target.StorageVersion(); sv != "" {
		if gv, err := schema.ParseGroupVersion(o.StoredAs); err == nil && gv.Version != sv {
			why = append(why, fmt.Sprintf("stored at %s, not %s", o.StoredAs, sv))
		}
	}
	if b := c.Target.Builtin; b != nil {
		w, j := b.judge(o.StoredAs, meta.Kind)
		switch j {
		case unreadable:
			o.Why = w
			c.Unreadable = append(c.Unreadable, o)
			return
		case stuck:
			if !stale {
				o.Why = w
				c.Stuck = append(c.Stuck, o)
				return
			}
			// Under an old key too: rewritten for the key (it stays
			// where it is stored), and the proof names it as stuck.
			why = append(why, w)
		case rewrite:
			why = append(why, w)
		}
	}
	if stale {
		why = append(why, fmt.Sprintf("under %s, not %s", o.StoredWith, c.Writer))
	}
	if len(why) > 0 {
		o.Why = joinWhy(why)
		c.Rewrite = append(c.Rewrite, o)
	}
}

// under names how value is stored, as Writer names the key that writes:
// StoredWith, and for a value under the KMS v2 plugin that writes, once
// the plugin said its key ID, the key ID the value is under. A value of
// that plugin whose key ID cannot be read is named so, with the error.
func (c *Census) under(value []byte) (string, error) {
	with := decrypt.StoredWith(value)
	if c.WriterKeyID == "" || with != etcdscan.Plugin(c.Writer) {
		return with, nil
	}
	return etcdscan.WithKeyIDOf(with, value)
}

// nameOf is under without the error, for counts.
func (c *Census) nameOf(value []byte) string {
	name, _ := c.under(value)
	return name
}

func joinWhy(why []string) string {
	out := why[0]
	for _, w := range why[1:] {
		out += "; " + w
	}
	return out
}
