package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/regghost/regghost/pkg/usage"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// Builtin is what a built-in resource's stored objects are judged against:
// the running API server's storage version (from its discovery), what its
// release decodes, and what a release to upgrade to decodes.
type Builtin struct {
	// Asked says the API server was asked; Served that it serves the
	// resource. Stored is the resource as its discovery gives it (an
	// empty Hash: it does not say where it stores it).
	Asked, Served bool
	// NotAsked says why the API server was not asked.
	NotAsked string
	Stored   apiview.Stored
	// Server is the running API server's version; Running its release's
	// table (nil when regghost has none for it).
	Server  string
	Running *catalog.ReleaseTable
	// Target is the table of the release given to upgrade to (nil: none);
	// Skipped are the minor releases between Server and Target that an
	// upgrade goes through and that are not judged.
	Target  *catalog.ReleaseTable
	Skipped []string
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
	targetReads := func(at string) bool { return b.Target == nil || b.Target.Reads(at, kind) }
	switch {
	case b.Running != nil && !b.Running.Reads(storedAs, kind):
		return fmt.Sprintf("stored at %s, which kube-apiserver %s does not decode. Way out: %s", storedAs, b.Server, wayOutUndecodable), unreadable
	case b.Stored.Hash != "":
		if at, _ := b.Stored.StoredAt(storedAs, kind); !at {
			why := fmt.Sprintf("stored at %s, not %s (the API server's storage version)", storedAs, b.storage())
			switch {
			case b.Stored.Storage == "" || targetReads(b.Stored.Storage):
				return why, rewrite
			case targetReads(storedAs):
				// Kubernetes T reads it where it is; a rewrite would move
				// it where T cannot: it stays.
				return "", stays
			}
			return fmt.Sprintf("%s; Kubernetes %s decodes neither. Way out: %s", why, catalog.Minor(b.Target.Release), b.wayOut(storedAs, kind)), stuck
		}
		if !targetReads(storedAs) {
			return fmt.Sprintf("stored at %s, the API server's storage version, which Kubernetes %s does not decode: a rewrite here stores it there again. Way out: %s",
				storedAs, catalog.Minor(b.Target.Release), b.wayOut(storedAs, kind)), stuck
		}
	case !targetReads(storedAs):
		return fmt.Sprintf("stored at %s, which Kubernetes %s does not decode (the API server did not say where it stores %s, so whether a rewrite moves it is not known)",
			storedAs, catalog.Minor(b.Target.Release), b.Stored.Resource), stuck
	}
	return "", stays
}

// judgeKMS judges an object under KMS, whose stored version is not read
// here: against a target release, by where the API server stores the
// resource.
func (b *Builtin) judgeKMS() string {
	if b.Target == nil {
		return ""
	}
	target := catalog.Minor(b.Target.Release)
	if b.Stored.Storage == "" {
		return fmt.Sprintf("under KMS, so the version it is stored at is not read here, and the API server did not say where it stores %s: whether Kubernetes %s reads it is not known", b.Stored.Resource, target)
	}
	if !b.Target.Reads(b.Stored.Storage, b.Stored.Kind) {
		return fmt.Sprintf("under KMS, so its version is not read here; the API server stores %s at %s, which Kubernetes %s does not decode. Way out: %s",
			b.Stored.Resource, b.Stored.Storage, target, b.wayOut(b.Stored.Storage, b.Stored.Kind))
	}
	return ""
}

// wayOut is the way out for objects the target release cannot read and no
// rewrite here moves: a release between the running one and the target
// that reads them and stores at a version the target reads, or deleting
// them before the upgrade.
func (b *Builtin) wayOut(at, kind string) string {
	target := catalog.Minor(b.Target.Release)
	for _, r := range catalog.Releases() {
		m := catalog.Minor(r.Release)
		if catalog.CompareMinor(m, target) >= 0 || (catalog.Minor(b.Server) != "" && catalog.CompareMinor(m, b.Server) <= 0) || !r.Reads(at, kind) {
			continue
		}
		if to, ok := r.StorageOf(b.Stored.Group, b.Stored.Resource); ok && b.Target.Reads(to, kind) {
			return fmt.Sprintf("upgrade to %s first (it reads %s and stores at %s, which %s reads) and run regghost migrate there; "+
				"or delete these objects before the upgrade and create them again after it", m, at, to, target)
		}
	}
	return fmt.Sprintf("delete these objects before the upgrade and create them again after it, at a version %s serves", target)
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
// target decodes ("": no target); notAsked says why view is nil. Every kube-apiserver of the control plane
// (the endpoints of the default/kubernetes Service) is asked: API servers
// of releases that store the resource differently (an upgrade half done)
// are refused, since a rewrite through one may undo another's. The rewrite
// goes through a version the API server serves.
func JudgeBuiltin(ctx context.Context, t *Target, view *apiview.View, notAsked, target string) error {
	if t.CRD != nil {
		if target != "" {
			return usage.Errorf("--target-release judges built-in resources; %s is defined by CustomResourceDefinition %s, whose spec.versions say what is read: drop --target-release", t.Resource, t.CRD.Name)
		}
		return nil
	}
	b := &Builtin{NotAsked: notAsked}
	if target != "" {
		tt, err := catalog.ReleaseFor(target)
		if err != nil {
			return usage.Errorf("--target-release: %v", err)
		}
		b.Target = &tt
	}
	if view != nil {
		if err := b.ask(ctx, t, view); err != nil {
			return err
		}
	}
	if b.Target != nil && catalog.Minor(b.Server) != "" {
		server, to := catalog.Minor(b.Server), catalog.Minor(b.Target.Release)
		if catalog.CompareMinor(to, server) < 0 {
			return usage.Errorf("--target-release %s is older than the API server (%s): it judges an upgrade", to, b.Server)
		}
		for _, m := range catalog.MinorsBetween(server, to) {
			b.Skipped = append(b.Skipped, m)
		}
	}
	t.Builtin = b
	return nil
}

// ask reads the resource's storage from every kube-apiserver that answers
// (t.Servers, asked here when the caller has not); those that could not be
// asked are named in t.Servers, never skipped silently.
func (b *Builtin) ask(ctx context.Context, t *Target, view *apiview.View) error {
	if t.Servers == nil {
		t.Servers = AskServers(ctx, view)
	}
	var seen []string
	for _, srv := range t.Servers.Asked {
		version := srv.Version
		var decodes []string
		var running *catalog.ReleaseTable
		if rt, err := catalog.ReleaseFor(version); err == nil {
			running, decodes = &rt, rt.Decodes
		}
		s, ok, err := srv.View.StoredResource(ctx, t.Resource, decodes)
		if err != nil {
			t.Servers.NotAsked = append(t.Servers.NotAsked, fmt.Sprintf("%s: read where %s is stored: %s", srv.Address, t.Resource, oneLine(err.Error())))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s (%s) stores it at %s", srv.Address, version, orUnsaid(s)))
		if !b.Asked {
			b.Asked, b.Served, b.Stored, b.Server, b.Running = true, ok, s, version, running
			continue
		}
		if version != b.Server || s.Hash != b.Stored.Hash {
			return fmt.Errorf("refused: the API servers disagree on %s: %s; finish the upgrade of every control-plane node, then run again", t.Resource, strings.Join(seen, ", "))
		}
	}
	if !b.Asked {
		b.NotAsked = "no kube-apiserver answered: " + t.Servers.Unasked()
		return nil
	}
	if b.Served && !slices.Contains(b.Stored.Versions, t.Version) {
		// The catalog's version is another release's: write through one
		// this API server serves, its storage version's if it does.
		t.Version = b.Stored.Versions[0]
		if i := strings.LastIndex(b.Stored.Storage, "/"); i >= 0 && b.Stored.Storage[:i] == t.Resource.Group && slices.Contains(b.Stored.Versions, b.Stored.Storage[i+1:]) {
			t.Version = b.Stored.Storage[i+1:]
		} else if b.Stored.Storage == "v1" && t.Resource.Group == "" {
			t.Version = "v1"
		}
	}
	return nil
}

// orUnsaid names where s is stored, or says discovery does not say.
func orUnsaid(s apiview.Stored) string {
	switch {
	case s.Storage != "":
		return s.Storage
	case s.Hash != "":
		return "hash " + s.Hash
	}
	return "no version it says"
}
