package backup

import (
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Witnesses are the keys the object stored under key rests on, worked
// out from its path under prefix: its namespace key when it is
// namespaced, and its CRD key when it is a custom resource. Written
// without them, it is a ghost.
func Witnesses(prefix, key string) []string {
	if prefix == "" {
		return nil
	}
	k, err := etcdscan.ParseKey(prefix, key)
	if err != nil {
		return nil
	}
	var out []string
	if k.Namespace != "" {
		out = append(out, prefix+"namespaces/"+k.Namespace)
	}
	if group, dotted := catalog.GroupOfPrefix(k.Prefix); dotted && !catalog.IsBuiltinGroup(group) {
		out = append(out, prefix+"apiextensions.k8s.io/customresourcedefinitions/"+k.Prefix[len(group)+1:]+"."+group)
	}
	return out
}

// NeedsOf are the keys entry e must find in place to be written back
// without becoming a ghost: those recorded at capture (Entry.Needs), or,
// for a backup written before they were recorded by a command that
// changed live objects (dangling, unstick: Action, else the audit log's
// actions), the witnesses of its path that were not absent then, at an
// unknown create revision (0). A purge's entries that recorded nothing
// need nothing: the purge took them from a namespace or CRD already gone,
// and restore puts them back as they were.
func (b *Backup) NeedsOf(e Entry) []Present {
	if e.Needs != nil {
		return e.Needs
	}
	live := b.Action == ActionDangling || b.Action == ActionUnstick
	for _, a := range b.Actions {
		live = live || a == ActionDangling || a == ActionUnstick
	}
	if !live {
		return nil
	}
	var out []Present
	for _, w := range Witnesses(b.Prefix, e.Key) {
		if !contains(e.Absent, w) {
			out = append(out, Present{Key: w})
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
