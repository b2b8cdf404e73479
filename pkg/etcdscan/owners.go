package etcdscan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/decode"
)

// uidSet holds every UID seen, as 16 bytes when it is a UUID (all UIDs
// Kubernetes assigns are) so a million objects cost little memory.
type uidSet struct {
	compact map[[16]byte]struct{}
	other   map[string]struct{}
}

func newUIDSet() *uidSet {
	return &uidSet{compact: map[[16]byte]struct{}{}, other: map[string]struct{}{}}
}

func (u *uidSet) add(uid string) {
	if uid == "" {
		return
	}
	if id, err := uuid.Parse(uid); err == nil {
		u.compact[id] = struct{}{}
		return
	}
	u.other[uid] = struct{}{}
}

func (u *uidSet) has(uid string) bool {
	if id, err := uuid.Parse(uid); err == nil {
		_, ok := u.compact[id]
		return ok
	}
	_, ok := u.other[uid]
	return ok
}

// ownedObject is an object whose owners are checked once the walk is done.
// Only the key is kept; the object is read again if its owners are missing.
type ownedObject struct {
	key  string
	uids []string
}

func (s *scan) noteOwners(key string, refs []metav1.OwnerReference) {
	o := ownedObject{key: key}
	for _, r := range refs {
		o.uids = append(o.uids, string(r.UID))
	}
	s.owned = append(s.owned, o)
}

// checkOwners reports objects all of whose owners are gone. Owners missing
// from the UID set (which covers only the scanned keys) are looked up by kind
// and name before an object is called dangling.
func (s *scan) checkOwners(ctx context.Context) error {
	for _, o := range s.owned {
		found := false
		for _, uid := range o.uids {
			if s.uids.has(uid) {
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
		k, _ := ParseKey(s.opts.Prefix, o.key)
		f := Finding{Key: o.key, Resource: k.Prefix, Namespace: k.Namespace, Name: k.Name, APIVersion: obj.APIVersion, Kind: obj.Kind,
			Format: string(obj.Format), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
		if rs, ok := s.opts.Catalog.Lookup(k.Prefix); ok {
			f.Resource = rs[0].GroupResource()
		}
		if !obj.Meta.CreationTimestamp.IsZero() {
			t := obj.Meta.CreationTimestamp.Time
			f.Created = &t
		}
		reason := "every owner is gone: " + strings.Join(missing, "; ")
		s.record(f).add(ClassDanglingOwner, reason)
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
	res, ok := s.opts.Catalog.ForKind(gv.Group, ref.Kind)
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
