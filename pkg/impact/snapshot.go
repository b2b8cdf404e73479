package impact

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// snapshotContents is where VolumeSnapshotContents are stored, under the
// registry prefix.
const snapshotContents = "snapshot.storage.k8s.io/volumesnapshotcontents/"

// storedContent is a VolumeSnapshotContent read from the keyspace: what it
// is bound to and what its deletion does to the storage snapshot.
type storedContent struct {
	key, name string
	// policy is spec.deletionPolicy (Delete or Retain).
	policy string
	// refNamespace, refName and refUID are spec.volumeSnapshotRef: the
	// VolumeSnapshot the content is bound to (its UID is empty while a
	// pre-provisioned content waits for its snapshot to bind it).
	refNamespace, refName, refUID string
}

// boundTo reports whether the content's spec.volumeSnapshotRef binds it to
// the snapshot ns/name with UID uid, as the snapshot controller reads it
// (external-snapshotter, syncContent): a ref with another UID names an
// earlier snapshot of the same name, which the controller treats as gone,
// not as this one; a ref with no UID yet is a pre-provisioned content only
// reserved for the name, which the controller leaves alone when no such
// snapshot exists. A snapshot with no UID of its own (nothing to compare)
// is taken to be the one the ref names.
func (c storedContent) boundTo(ns, name, uid string) bool {
	if c.refNamespace != ns || c.refName != name || c.refUID == "" {
		return false
	}
	return uid == "" || c.refUID == uid
}

// snapshotEffects records what deleting a VolumeSnapshot does to the
// storage snapshot behind it. A snapshot and its VolumeSnapshotContent are
// bound from both sides: the snapshot's status.boundVolumeSnapshotContentName
// and the content's spec.volumeSnapshotRef (namespace, name, UID). The
// controllers write the content's side first, so a snapshot whose status is
// not written yet is bound from that side only; either side is enough for
// the snapshot controller to delete a content with deletionPolicy Delete once
// its snapshot is gone, and for the CSI driver to destroy the storage
// snapshot. A content that cannot be read, where the binding may be, makes
// the effect unknown, never nothing.
func (a *analysis) snapshotEffects(key string, obj map[string]any) error {
	if err := a.loadContents(); err != nil {
		return err
	}
	str := func(path ...string) string {
		v, _, _ := unstructuredString(obj, path...)
		return v
	}
	ns, name, uid := str("metadata", "namespace"), str("metadata", "name"), str("metadata", "uid")
	if name == "" {
		if k, err := etcdscan.ParseKey(a.registry, key); err == nil {
			ns, name = k.Namespace, k.Name
		}
	}
	statusKey := ""
	if bound := str("status", "boundVolumeSnapshotContentName"); bound != "" {
		statusKey = a.registry + snapshotContents + bound
		c, why, ok := a.content(statusKey)
		switch {
		case !ok:
			a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown), Objects: []string{statusKey},
				Summary: "whether the storage snapshot is destroyed is unknown: " + why})
		case c.policy == "Delete":
			a.add(key, snapshotDestroyed(c, "its VolumeSnapshotContent "+c.name))
		}
	}
	found := statusKey != ""
	for _, c := range a.contents {
		if c.key == statusKey || !c.boundTo(ns, name, uid) {
			continue
		}
		found = true
		if c.policy == "Delete" {
			a.add(key, snapshotDestroyed(c, "VolumeSnapshotContent "+c.name+" is bound to it by its spec.volumeSnapshotRef (the snapshot's status does not name it)"))
		}
	}
	if found || len(a.unreadableContents) == 0 {
		return nil
	}
	unreadable := make([]string, len(a.unreadableContents))
	for i, u := range a.unreadableContents {
		unreadable[i] = u.key + " (" + u.why + ")"
	}
	a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown),
		Summary: fmt.Sprintf("whether a VolumeSnapshotContent bound to this snapshot destroys its storage snapshot is unknown: %d VolumeSnapshotContents cannot be read here (%s); pass --encryption-provider-config, or let the API server answer",
			len(unreadable), strings.Join(unreadable, "; "))})
	return nil
}

// snapshotDestroyed is the effect of deleting the snapshot a content with
// deletionPolicy Delete is bound to; which says how it is bound.
func snapshotDestroyed(c storedContent, which string) Effect {
	return Effect{Kind: SnapshotDestroyed, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(SnapshotDestroyed), Objects: []string{c.key},
		Summary: which + " has deletionPolicy Delete: the snapshot controller deletes it and the CSI driver destroys the storage snapshot"}
}

// content returns the content stored under key, or why it cannot be had.
func (a *analysis) content(key string) (storedContent, string, bool) {
	for _, c := range a.contents {
		if c.key == key {
			return c, "", true
		}
	}
	for _, u := range a.unreadableContents {
		if u.key == key {
			return storedContent{}, u.why, false
		}
	}
	return storedContent{}, key + " does not exist", false
}

// unreadableContent is a VolumeSnapshotContent nobody here could read.
type unreadableContent struct{ key, why string }

// loadContents reads every VolumeSnapshotContent once, through the content
// reader (an encrypted one is decrypted or read through the API server);
// one nobody can read is remembered with why.
func (a *analysis) loadContents() error {
	if a.contentsLoaded {
		return nil
	}
	a.contentsLoaded = true
	start := a.registry + snapshotContents
	err := a.store.Range(a.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		key := string(kv.Key)
		obj, err := a.reader.Read(a.ctx, key, kv.Value)
		if err != nil {
			a.unreadableContents = append(a.unreadableContents, unreadableContent{key: key, why: oneLine(err)})
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			a.unreadableContents = append(a.unreadableContents, unreadableContent{key: key, why: oneLine(err)})
			return nil
		}
		str := func(path ...string) string {
			v, _, _ := unstructuredString(u, path...)
			return v
		}
		a.contents = append(a.contents, storedContent{key: key, name: strings.TrimPrefix(key, start), policy: str("spec", "deletionPolicy"),
			refNamespace: str("spec", "volumeSnapshotRef", "namespace"), refName: str("spec", "volumeSnapshotRef", "name"), refUID: str("spec", "volumeSnapshotRef", "uid")})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the VolumeSnapshotContents under %s: %w", start, err)
	}
	return nil
}
