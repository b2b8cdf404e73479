package etcdscan

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/decode"
)

// uidSet holds a 64-bit fingerprint of every UID seen: the UUID's bits
// folded (Kubernetes UIDs are random UUIDs), or an FNV-1a hash of any other
// string. Eight bytes per object keep a million objects at 8 MiB; a
// collision could only make a missing owner look present, hiding a suspect,
// never inventing one. It is sorted once, after the walk.
type uidSet struct {
	ids    []uint64
	sorted bool
}

func newUIDSet() *uidSet { return &uidSet{} }

func fingerprint(uid string) uint64 {
	if id, err := uuid.Parse(uid); err == nil {
		return binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])
	}
	h := fnv.New64a()
	h.Write([]byte(uid))
	return h.Sum64()
}

func (u *uidSet) add(uid string) {
	if uid != "" {
		u.addFingerprint(fingerprint(uid))
	}
}

func (u *uidSet) addFingerprint(fp uint64) {
	u.ids = append(u.ids, fp)
	u.sorted = false
}

func (u *uidSet) hasFingerprint(fp uint64) bool {
	if !u.sorted {
		slices.Sort(u.ids)
		u.sorted = true
	}
	_, ok := slices.BinarySearch(u.ids, fp)
	return ok
}

// ownedObject is an object whose owners are checked once the walk is done.
// Only the key and owner fingerprints are kept; the object is read again if
// its owners are missing.
type ownedObject struct {
	key    string
	uid    uint64
	owners []uint64
}

func (s *scan) noteOwners(key, uid string, refs []metav1.OwnerReference) {
	o := ownedObject{key: key, uid: fingerprint(uid), owners: make([]uint64, len(refs))}
	for i, r := range refs {
		o.owners[i] = fingerprint(string(r.UID))
	}
	s.owned = append(s.owned, o)
}

// checkOwners reports objects all of whose owners are gone. Owners missing
// from the UID set (which covers only the scanned keys) are looked up by kind
// and name before an object is called dangling.
func (s *scan) checkOwners(ctx context.Context) error {
	for _, o := range s.owned {
		found := false
		for _, fp := range o.owners {
			if s.uids.hasFingerprint(fp) {
				found = true
				break
			}
		}
		if found {
			continue
		}
		kv, err := s.store.Get(ctx, o.key)
		if err != nil {
			return err
		}
		if kv == nil {
			continue
		}
		obj, err := decode.Meta(kv.Value)
		if err != nil {
			continue
		}
		var missing []string
		decided := true
		for _, ref := range obj.Meta.OwnerReferences {
			state, err := s.ownerState(ctx, obj.Meta.Namespace, ref)
			if err != nil {
				return err
			}
			switch state {
			case ownerPresent:
				decided = false
			case ownerUnknown:
				decided = false
			default:
				missing = append(missing, fmt.Sprintf("%s %s (uid %s): %s", ref.Kind, ref.Name, ref.UID, state))
			}
		}
		if !decided || len(missing) == 0 {
			continue
		}
		f := s.findingOf(kv, obj)
		reason := "every owner is gone: " + strings.Join(missing, "; ")
		if err := s.record(f, func(f *Finding) { f.add(ClassDanglingOwner, reason) }); err != nil {
			return err
		}
	}
	return nil
}

const (
	ownerPresent = "present"
	ownerUnknown = "unknown"
)

// ownerState looks an owner up by kind and name.
func (s *scan) ownerState(ctx context.Context, namespace string, ref metav1.OwnerReference) (string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "owner apiVersion " + ref.APIVersion + " is invalid", nil
	}
	res, ok := s.forKind(gv.Group, ref.Kind)
	if !ok {
		return ownerUnknown, nil
	}
	ns := ""
	if res.Namespaced {
		ns = namespace
	}
	key := ObjectKey(s.opts.Prefix, res.Prefix(), ns, ref.Name)
	kv, err := s.store.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if kv == nil {
		return "no " + key, nil
	}
	obj, err := decode.Meta(kv.Value)
	if err != nil || obj.Encryption != nil {
		return ownerUnknown, nil
	}
	if obj.Meta.UID != ref.UID {
		return fmt.Sprintf("%s now holds uid %s", key, obj.Meta.UID), nil
	}
	return ownerPresent, nil
}

// countList renders per-resource counts as "3 pods, 1 widgets.example.com".
func countList(counts map[string]int) string {
	var names []string
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", counts[n], n)
	}
	return strings.Join(parts, ", ")
}
