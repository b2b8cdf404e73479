package unstick

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/dangling"
)

// ResolveOptions configure Resolve: Run's options, and what deleting the
// dangling APIServices that hold a deletion may take.
type ResolveOptions struct {
	Options
	// AcceptManaged deletes a dangling APIService that Helm, Argo CD or
	// Flux tracks (dangling.AcceptManagedFlag); without it such an
	// APIService is refused and nothing is changed.
	AcceptManaged bool
	// ConfirmRevealed is asked, with what it is, before finalizers the
	// first analysis did not show are removed: objects whose blockers only
	// the APIServices' deletion revealed. It shows them and returns nil to
	// go on; nil, or an error, stops the run there (ErrRevealed).
	ConfirmRevealed func(revealed []Blocker) error
}

// ErrRevealed stops a Resolve whose second analysis found finalizers to
// remove that the plan the operator confirmed did not show.
var ErrRevealed = errors.New("the APIServices' deletion revealed objects held by finalizers the plan did not show")

// revealed are a's blockers with finalizers to remove that shown did not
// have: an object not shown, or a finalizer to remove it did not name.
func revealed(shown, a *Analysis) []Blocker {
	// A namespace's metadata and spec finalizers are two blockers of one key.
	type id struct {
		key  string
		spec bool
	}
	before := map[id][]string{}
	for _, b := range shown.Blockers {
		before[id{b.Key, b.Spec}] = b.Remove
	}
	var out []Blocker
	for _, b := range a.Blockers {
		for _, f := range b.Remove {
			if !slices.Contains(before[id{b.Key, b.Spec}], f) {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// Resolve finishes a deletion the way the analysis says it can be.
//
// A deletion held by APIServices whose Service is gone
// (a.DeleteAPIServices, see Follow) is unblocked by deleting them, with
// dangling's fix (dangling.PlanFixes, then dangling.Apply: a verified
// per-key backup, each delete preconditioned and read back); then the
// namespace the plan read is annotated for its controller to look again
// (Nudge, the plan's a.Nudge; a namespace created again since stops the run
// there, wrapping ErrRecreated), and the finalizers nobody serves are
// removed as Run does, or, when there are none, Resolve waits for the
// deletion to finish (Wait). Any other deletion is Run.
//
// A refusal, before anything is changed, wraps ErrRefused. The Result is
// nil only when nothing was written.
func Resolve(ctx context.Context, a *Analysis, registry string, o ResolveOptions) (*Result, error) {
	if len(a.DeleteAPIServices) == 0 {
		return Run(ctx, a, registry, o.Options)
	}
	return deleteDanglingAPIServices(ctx, a, registry, o)
}

// deleteDanglingAPIServices unblocks a deletion held by APIServices whose
// Service is gone: it deletes them, then waits for the deletion to finish.
// Finalizers nobody serves are removed after, as Run does.
func deleteDanglingAPIServices(ctx context.Context, a *Analysis, registry string, o ResolveOptions) (*Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	fixes, refused := dangling.PlanFixes(a.DeleteAPIServices, dangling.PlanOptions{AcceptManaged: o.AcceptManaged, DeleteDown: a.DeleteUnavailable})
	if len(refused) > 0 {
		return nil, fmt.Errorf("%w: APIService %s: %s (%s); nothing was changed", ErrRefused, refused[0].Ref.Name, refused[0].Reason, refused[0].WayOut)
	}
	fixed, err := dangling.Apply(ctx, fixes, dangling.FixOptions{Client: o.Client, Dynamic: o.Dynamic, BackupRoot: o.BackupRoot, Registry: registry,
		Scope: "unstick " + a.Target + ": " + apiServicesScope(a), Now: now, Notices: o.Notices, Decrypt: o.Decrypt})
	if fixed == nil {
		return nil, err
	}
	res := &Result{Dir: fixed.Dir, Backup: fixed.Backup, Results: fixed.Results, Dirs: []string{fixed.Dir}}
	if err != nil {
		return res, err
	}
	// The nudge the plan showed, on the namespace it read, journaled to
	// the APIServices' audit log.
	o.Now = now
	nudged, err := Nudge(ctx, a, registry, fixed.Dir, o.Options)
	if nudged != nil {
		res.Results = append(res.Results, *nudged)
	}
	if errors.Is(err, ErrRecreated) {
		// The namespace reviewed is gone; the one of its name now was not
		// shown, and nothing more is done to it.
		res.Recreated = true
		return res, fmt.Errorf("%w; the APIServices are deleted (backed up in %s), and nothing was done to the new namespace", err, fixed.Dir)
	}
	if err != nil {
		return res, fmt.Errorf("%w; the APIServices are deleted (backed up in %s)", err, fixed.Dir)
	}
	shown := a
	if o.Analyze != nil {
		// The APIServices are gone and the namespace nudged: what is left
		// is judged anew, not from the analysis made before.
		if a, err = o.Analyze(ctx); err != nil {
			return res, fmt.Errorf("analyse again once the APIServices are gone: %w", err)
		}
		if shown.UID != "" && a.UID != shown.UID {
			// Another object of that name: nothing of it was shown.
			res.Recreated = true
			return res, fmt.Errorf("%s was %w (uid %s, was %s); the APIServices are deleted (backed up in %s), and nothing was done to the new one", a.Target, ErrRecreated, a.UID, shown.UID, fixed.Dir)
		}
	}
	if more := revealed(shown, a); len(more) > 0 {
		// Only what the operator was shown was confirmed.
		var keys []string
		for _, b := range more {
			keys = append(keys, b.Key+" ["+strings.Join(b.Remove, ", ")+"]")
		}
		stop := fmt.Errorf("%w: %s; the APIServices are deleted (backed up), nothing else was changed: run `regghost unstick %s` to review them", ErrRevealed, strings.Join(keys, "; "), a.Target)
		if o.ConfirmRevealed == nil {
			return res, stop
		}
		if err := o.ConfirmRevealed(more); err != nil {
			return res, fmt.Errorf("%w (%v)", stop, err)
		}
	}
	if a.Removable() > 0 {
		// What is left to do is Run's: the APIServices are gone.
		a.DeleteAPIServices = nil
		more, err := Run(ctx, a, registry, o.Options)
		if more != nil {
			res.Results = append(res.Results, more.Results...)
			res.Dirs = append(res.Dirs, more.Dirs...)
			res.Finished, res.Left = more.Finished, more.Left
		}
		return res, err
	}
	res.Finished, res.Left, err = Wait(ctx, a, registry, o.Client, o.Wait)
	return res, err
}

// apiServicesScope names the APIServices' backup: dangling ones, or
// unavailable ones when the operator chose to delete any whose backend is
// only down.
func apiServicesScope(a *Analysis) string {
	if len(a.DeleteUnavailable) > 0 {
		return "unavailable APIServices"
	}
	return "dangling APIServices"
}
