package migrate

import (
	"context"
	"fmt"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// Builtin is what a built-in resource's stored objects are judged against:
// the running API server's storage version (from its discovery), what its
// release decodes, and what a release to upgrade to decodes.
type Builtin struct {
	// Stored is the resource as the running API server's discovery gives
	// it; a zero Hash means the API server was not asked.
	Stored apiview.Stored
	// Server is the running API server's version; Running its release's
	// table (nil when regghost has none for it).
	Server  string
	Running *catalog.ReleaseTable
	// Target is the table of the release given to upgrade to (nil: none).
	Target *catalog.ReleaseTable
}

// storage names the version the running API server stores at.
func (b *Builtin) storage() string {
	if b.Stored.Storage != "" {
		return b.Stored.Storage
	}
	return "the version its storageVersionHash " + b.Stored.Hash + " names"
}

// judge says where an object of kind stored at storedAs goes: "" when it
// stays, otherwise why it is rewritten (rewrite) or why no rewrite here
// moves it (stuck) or why the API server cannot read it (unreadable).
func (b *Builtin) judge(storedAs, kind string) (why string, verdict judgement) {
	switch {
	case b.Running != nil && !b.Running.Reads(storedAs, kind):
		return fmt.Sprintf("stored at %s, which kube-apiserver %s does not decode. Way out: %s", storedAs, b.Server, wayOutUndecodable), unreadable
	case b.Stored.Hash != "":
		at, _ := b.Stored.StoredAt(storedAs, kind)
		if !at {
			why := fmt.Sprintf("stored at %s, not %s (the API server's storage version)", storedAs, b.storage())
			if b.Target != nil && b.Stored.Storage != "" && !b.Target.Reads(b.Stored.Storage, kind) {
				return why + "; " + b.targetStuck(b.Stored.Storage, kind), stuck
			}
			return why, rewrite
		}
		if b.Target != nil && !b.Target.Reads(storedAs, kind) {
			return fmt.Sprintf("stored at %s, the API server's storage version; %s", storedAs, b.targetStuck(storedAs, kind)), stuck
		}
	case b.Target != nil && !b.Target.Reads(storedAs, kind):
		return fmt.Sprintf("stored at %s, which Kubernetes %s does not decode (the API server's storage version was not read, so whether a rewrite moves it is not known)", storedAs, catalog.Minor(b.Target.Release)), stuck
	}
	return "", stays
}

// targetStuck says that the target release cannot read what the running
// one stores at, and the way out: a release between them that reads it and
// stores at a version the target reads, or deleting the objects first.
func (b *Builtin) targetStuck(at, kind string) string {
	target := catalog.Minor(b.Target.Release)
	s := fmt.Sprintf("Kubernetes %s does not decode %s, and a rewrite here stores it there again. Way out: ", target, at)
	for _, r := range catalog.Releases() {
		m := catalog.Minor(r.Release)
		if m == target || m == catalog.Minor(b.Server) || !r.Reads(at, kind) {
			continue
		}
		if to, ok := r.StorageOf(b.Stored.Group, b.Stored.Resource); ok && b.Target.Reads(to, kind) {
			return s + fmt.Sprintf("upgrade to %s first (it reads %s and stores at %s, which %s reads) and run regghost migrate there; "+
				"or delete these objects before the upgrade and create them again after it", m, at, to, target)
		}
	}
	return s + fmt.Sprintf("delete these objects before the upgrade and create them again after it, at a version %s serves", target)
}

// judgement is where the census puts an object.
type judgement int

const (
	stays judgement = iota
	rewrite
	stuck
	unreadable
)

// JudgeBuiltin sets how t's objects are judged when t is built in: against
// the storage version view's discovery gives (view nil: the API server was
// not asked) and what its release decodes, and against what release
// target decodes ("": no target).
func JudgeBuiltin(ctx context.Context, t *Target, view *apiview.View, target string) error {
	if t.CRD != nil {
		if target != "" {
			return fmt.Errorf("--target-release judges built-in resources; %s is defined by CustomResourceDefinition %s, whose spec.versions say what is read", t.Resource, t.CRD.Name)
		}
		return nil
	}
	b := &Builtin{}
	if target != "" {
		tt, err := catalog.ReleaseFor(target)
		if err != nil {
			return err
		}
		b.Target = &tt
	}
	if view != nil {
		v, err := view.Version()
		if err != nil {
			return err
		}
		b.Server = v
		var decodes []string
		if rt, err := catalog.ReleaseFor(v); err == nil {
			b.Running, decodes = &rt, rt.Decodes
		}
		stored, err := view.StoredResources(ctx, decodes)
		if s, ok := stored[t.Resource]; ok {
			b.Stored = *s
		} else if err != nil {
			return fmt.Errorf("read %s's storage version from the API server: %w", t.Resource, err)
		}
	}
	if b.Target == nil && b.Stored.Hash == "" && b.Running == nil {
		return nil
	}
	t.Builtin = b
	return nil
}
