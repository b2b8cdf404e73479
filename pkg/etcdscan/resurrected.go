package etcdscan

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
)

// Through the API an object can only be created in a namespace that exists,
// so an object whose key is older (lower create revision) than its
// namespace's key survived an earlier namespace of that name: the namespace
// was force-deleted, its objects stayed in etcd, and creating the namespace
// again brought them back to life. Controllers act on them at once, and
// what they create from them (a resurrected ReplicaSet's new Pods) belongs
// to the same incident.

// noteResurrected marks f as resurrected. The revisions are the evidence,
// and the creation times must agree (the object strictly older than its
// namespace): a keyspace copied key by key (etcdctl make-mirror, a
// migration) gives every key a new create revision in key order but keeps
// each object's creationTimestamp. An object whose creation time cannot be
// read is not judged.
func (s *scan) noteResurrected(ctx context.Context, f *Finding, ns string, objRev, nsRev int64) {
	nsCreated, nsWhy := s.namespaceCreated(ctx, ns)
	unread := f.unreadCreated
	if nsWhy != "" {
		unread = "namespace " + ns + ": " + nsWhy
	}
	if unread != "" && (f.Created == nil || nsCreated.IsZero()) {
		// Nobody here can read a creation time: the revisions alone say
		// it, and the reason says the times were not compared.
		f.add(ClassResurrected, fmt.Sprintf("stored at revision %d, before namespace %s was created again at revision %d: it survived an earlier namespace %s and came back with the new one (the creation times cannot be read here to confirm it: %s)",
			objRev, ns, nsRev, ns, unread))
		if f.UID != "" {
			s.resurrected.add(f.UID)
		}
		return
	}
	if nsCreated.IsZero() || f.Created == nil || !f.Created.Before(nsCreated) {
		return
	}
	objTime, nsTime := "created "+f.Created.UTC().Format(time.RFC3339), "created "+nsCreated.UTC().Format(time.RFC3339)
	f.add(ClassResurrected, fmt.Sprintf("stored at revision %d (%s), before namespace %s was created again at revision %d (%s): it survived an earlier namespace %s and came back with the new one",
		objRev, objTime, ns, nsRev, nsTime, ns))
	if f.UID != "" {
		s.resurrected.add(f.UID)
	}
}

// namespaceCreated returns the creation time of a namespace, read as
// stored, decrypted, or through the API server; when none can, why.
func (s *scan) namespaceCreated(ctx context.Context, ns string) (time.Time, string) {
	if t, ok := s.nsTimes[ns]; ok {
		return t, s.nsTimeWhy[ns]
	}
	var t time.Time
	why := ""
	key := s.opts.Prefix + "namespaces/" + ns
	if kv, err := s.store.Get(ctx, key); err == nil && kv != nil {
		obj, err := decode.Meta(kv.Value)
		if err == nil && obj.Encryption != nil {
			switch {
			case s.opts.Decrypter != nil && obj.Encryption.Provider != "kms":
				plain, derr := s.opts.Decrypter.Decrypt(ctx, key, schema.GroupResource{Resource: "namespaces"}, kv.Value)
				if derr != nil {
					err = derr
				} else {
					obj, err = decode.Meta(plain)
				}
			case s.opts.API != nil:
				m, aerr := s.opts.API.Get(ctx, namespacesResource, "", ns)
				if aerr != nil {
					err = fmt.Errorf("encrypted, and the API server answered: %s", readAnswer(aerr, nil).said)
				} else {
					obj.Encryption, obj.Meta.CreationTimestamp = nil, m.CreationTimestamp
				}
			default:
				err = fmt.Errorf("encrypted, no --encryption-provider-config, and the API server is not asked")
			}
		}
		if err != nil {
			why = err.Error()
		} else if obj.Encryption == nil {
			t = obj.Meta.CreationTimestamp.Time
		}
	}
	if s.nsTimes == nil {
		s.nsTimes, s.nsTimeWhy = map[string]time.Time{}, map[string]string{}
	}
	s.nsTimes[ns], s.nsTimeWhy[ns] = t, why
	return t, why
}

// resurrectedChains marks, transitively, the objects created since by a
// resurrected owner.
func (s *scan) resurrectedChains(ctx context.Context) error {
	if len(s.resurrected.ids) == 0 {
		return nil
	}
	// marked is by index in s.owned: a byte per owned object, whatever
	// the number of findings.
	marked := make([]bool, len(s.owned))
	for changed := true; changed; {
		changed = false
		for i, o := range s.owned {
			if marked[i] {
				continue
			}
			owner := -1
			for j, fp := range o.owners {
				if s.resurrected.hasFingerprint(fp) {
					owner = j
					break
				}
			}
			if owner < 0 {
				continue
			}
			f, err := s.found.get(o.key)
			if err != nil {
				return err
			}
			if f != nil && f.Has(ClassResurrected) {
				marked[i] = true
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
			reason := "created since by a resurrected owner"
			if refs := obj.Meta.OwnerReferences; owner < len(refs) {
				reason = fmt.Sprintf("created since by its resurrected owner %s %s (uid %s)", refs[owner].Kind, refs[owner].Name, refs[owner].UID)
			}
			if err := s.record(s.findingOf(kv, obj), func(f *Finding) { f.add(ClassResurrected, reason) }); err != nil {
				return err
			}
			s.resurrected.addFingerprint(o.uid)
			marked[i] = true
			changed = true
		}
	}
	return nil
}

// findingOf is a new finding for a key read again after the walk.
func (s *scan) findingOf(kv *mvccpb.KeyValue, obj *decode.Object) Finding {
	k, _ := ParseKey(s.opts.Prefix, string(kv.Key))
	f := Finding{Key: string(kv.Key), Resource: k.Prefix, Namespace: k.Namespace, Name: k.Name, APIVersion: obj.APIVersion, Kind: obj.Kind,
		UID: string(obj.Meta.UID), Format: string(obj.Format), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	if rs := s.resolve(k.Prefix).resources; len(rs) > 0 {
		f.Resource = rs[0].GroupResource()
	}
	if !obj.Meta.CreationTimestamp.IsZero() {
		t := obj.Meta.CreationTimestamp.Time
		f.Created = &t
	}
	return f
}

// readCreated reads the creation time (and UID) of an object whose value
// is encrypted with keys regghost lacks, through the API server; when it
// cannot, it notes why on the finding.
func (s *scan) readCreated(ctx context.Context, f *Finding, res *catalog.Resource, k Key) {
	if s.opts.API == nil || res == nil {
		f.unreadCreated = "encrypted, no --encryption-provider-config can decrypt it, and the API server is not asked"
		return
	}
	m, err := s.opts.API.Get(ctx, *res, k.Namespace, k.Name)
	if err != nil || m.CreationTimestamp.IsZero() {
		why := "no creation time"
		if err != nil {
			why = readAnswer(err, nil).said
		}
		f.unreadCreated = "encrypted, and the API server answered: " + why
		return
	}
	t := m.CreationTimestamp.Time
	f.Created = &t
	if f.UID == "" {
		f.UID = string(m.UID)
	}
}
