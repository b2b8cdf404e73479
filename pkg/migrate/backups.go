package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Held is one of regghost's backups on this node that still holds values
// of the resource under a provider and key other than the one that writes
// (a restore of it needs that key), or, for a custom resource, at a version
// other than the storage version (a restore of it undoes what migrate
// moved).
type Held struct {
	Path string `json:"path"`
	// ByKey counts its values per provider and key, those under the key
	// that writes left out (empty when no EncryptionConfiguration was
	// given).
	ByKey map[string]int `json:"byKey"`
	// ByVersion counts, for a custom resource, its values per stored
	// apiVersion ("example.com/v1beta1"), those at the CRD's storage
	// version left out: written back, each is stored where migrate proved
	// nothing is, and `regghost migrate` must move it again.
	ByVersion map[string]int `json:"byVersion,omitempty"`
	// Unlisted are those of ByVersion at a version the CRD's spec.versions
	// no longer lists: `regghost restore` refuses to write them back
	// (every list of the resource would fail) until that version is listed
	// again.
	Unlisted map[string]int `json:"unlisted,omitempty"`
	// VersionUnread counts, for a custom resource, its values whose stored
	// version could not be read here (encrypted at rest with no
	// configuration that reads them, under a KMS provider, or not
	// decoding): nothing is said about their version.
	VersionUnread int `json:"versionUnread,omitempty"`
	// SnapshotRevision is the revision of the etcd snapshot taken with it
	// (0: none): a snapshot taken before the migration holds every value
	// as it was then.
	SnapshotRevision int64 `json:"snapshotRevision,omitempty"`
}

// Unread is a backup under the root that could not be read (a checksum
// that does not match, a file cut short, a directory that is not a
// backup). What it holds is not known: callers name it with its error and
// give no verdict about it, neither "needs the old key" nor "may go".
type Unread struct {
	Path string `json:"path"`
	// Error is why it could not be read.
	Error string `json:"error"`
}

// Backups is what regghost's backups on this node hold of one resource
// (ReadBackups).
type Backups struct {
	// Held are the backups that hold something of it (see Held), by path.
	Held []Held `json:"held,omitempty"`
	// Unreadable are the backups that could not be read, by path: no
	// verdict about them may be given.
	Unreadable []Unread `json:"unreadable,omitempty"`
}

// InBackups reads every backup under root and names those holding values
// of c's resource not under c.Writer, and, when rotated (another key held
// values of it), those whose snapshot was taken before c's revision. A root
// that does not exist holds nothing. It is ReadBackups' view for the keys
// alone, as before versions were counted: it names neither the versions
// backups hold nor the backups that do not read (skipped), so a caller
// that gives a verdict about old keys or versions uses ReadBackups.
func InBackups(root string, c *Census, rotated bool) ([]Held, error) {
	if root == "" || c.Writer == "" {
		return nil, nil
	}
	all, err := ReadBackups(context.Background(), root, c, rotated, nil)
	if err != nil {
		return nil, err
	}
	var out []Held
	for _, h := range all.Held {
		if len(h.ByKey) > 0 || h.SnapshotRevision > 0 {
			h.ByVersion, h.Unlisted, h.VersionUnread = nil, nil, 0
			out = append(out, h)
		}
	}
	return out, nil
}

// ReadBackups reads every backup under root and returns those holding
// values of c's resource that a restore would bring back where this census
// proved nothing is: under a provider and key other than c.Writer (when
// c.Writer is set), or, for a custom resource, at a version other than the
// CRD's storage version (Held.ByVersion; Held.Unlisted those restore
// refuses); and, when rotated (another key held values of it), those whose
// snapshot was taken before c's revision. dec reads the stored version of
// values encrypted at rest (nil: they are counted in Held.VersionUnread).
// A root that does not exist holds nothing, and with neither c.Writer nor a
// CRD there is nothing to judge (nothing is read); otherwise a backup that
// does not read is returned in Backups.Unreadable with its error, never
// skipped.
func ReadBackups(ctx context.Context, root string, c *Census, rotated bool, dec *decrypt.Decrypter) (Backups, error) {
	var out Backups
	if root == "" || (c.Writer == "" && c.Target.CRD == nil) {
		return out, nil
	}
	dirs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read backups in %s: %w", root, err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		path := filepath.Join(root, d.Name())
		b, err := backup.ReadBackup(path)
		if err != nil {
			out.Unreadable = append(out.Unreadable, Unread{Path: path, Error: err.Error()})
			continue
		}
		h := Held{Path: path, ByKey: map[string]int{}}
		prefix := b.Prefix
		if prefix == "" {
			prefix = "/registry/"
		}
		for _, e := range b.Entries {
			if !strings.HasPrefix(e.Key, prefix+c.Target.Prefix+"/") {
				continue
			}
			if c.Writer != "" {
				if with := c.nameOf(e.Value); with != c.Writer {
					h.ByKey[with]++
				}
			}
			if c.Target.CRD != nil {
				if k, err := etcdscan.ParseKey(prefix, e.Key); err == nil && k.Prefix == c.Target.Prefix {
					c.countVersion(ctx, &h, e, dec)
				}
			}
		}
		if rotated && b.Snapshot != nil && b.Snapshot.Revision < c.Revision {
			h.SnapshotRevision = b.Snapshot.Revision
		}
		if len(h.ByKey) > 0 || len(h.ByVersion) > 0 || h.VersionUnread > 0 || h.SnapshotRevision > 0 {
			out.Held = append(out.Held, h)
		}
	}
	sort.Slice(out.Held, func(i, j int) bool { return out.Held[i].Path < out.Held[j].Path })
	sort.Slice(out.Unreadable, func(i, j int) bool { return out.Unreadable[i].Path < out.Unreadable[j].Path })
	return out, nil
}

// countVersion counts the stored version of a custom resource's value e in
// h: nothing at the storage version, the others by apiVersion (and in
// Unlisted when the CRD no longer lists it), VersionUnread when it cannot
// be read.
func (c *Census) countVersion(ctx context.Context, h *Held, e backup.Entry, dec *decrypt.Decrypter) {
	plain := e.Value
	if decrypt.StoredWith(e.Value) != decrypt.Identity {
		if dec == nil {
			h.VersionUnread++
			return
		}
		var err error
		if plain, err = dec.Decrypt(ctx, e.Key, c.Target.Resource, e.Value); err != nil {
			h.VersionUnread++
			return
		}
	}
	meta, err := decode.Meta(plain)
	if err != nil {
		h.VersionUnread++
		return
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		h.VersionUnread++
		return
	}
	if gv.Version == c.Target.Version {
		return
	}
	if h.ByVersion == nil {
		h.ByVersion, h.Unlisted = map[string]int{}, map[string]int{}
	}
	h.ByVersion[meta.APIVersion]++
	listed := slices.ContainsFunc(c.Target.CRD.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gv.Version })
	if !listed {
		h.Unlisted[meta.APIVersion]++
	}
}
