package repair

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/plural"
)

// Selector says what a purge may remove.
type Selector struct {
	// Namespace limits the purge to one namespace's ghosts.
	Namespace string
	// Keys are exact object keys to purge; each must be a ghost.
	Keys []string
	// ForceClasses lets suspects of these classes (stuck-terminating,
	// dangling-owner) be purged too.
	ForceClasses []etcdscan.Class
	// Reviewed, when set, is a scan report the user reviewed: only its keys
	// are purged, and only if unchanged since it was made.
	Reviewed *etcdscan.Report
	// AcceptSingleWitness lets ghosts that only one witness could confirm
	// (the API server unreachable, or not to be asked) be deleted.
	AcceptSingleWitness bool
}

// Plan is the set of keys a purge will delete, from a fresh scan.
type Plan struct {
	Scope    string
	Prefix   string
	Revision int64
	Targets  []etcdscan.Finding
	// Skipped are keys of the reviewed report that are left alone.
	Skipped []etcdwrite.Result
	// AcceptSingleWitness is Selector.AcceptSingleWitness.
	AcceptSingleWitness bool
	// Impact is what deleting each target sets in motion (SetImpact).
	Impact *impact.Report `json:"impact,omitempty"`
	// ImpactOptions say which irreversible effects may go ahead.
	ImpactOptions impact.Options
	// readers are what the impact was worked out with (PlanPurge): the
	// purge works it out again under the lock with them.
	readers *impact.Readers
}

// SetImpact records what deleting the targets sets in motion, and which
// irreversible effects the user let go ahead.
func (p *Plan) SetImpact(r *impact.Report, o impact.Options) {
	p.Impact, p.ImpactOptions = r, o
}

// Effects returns what deleting key sets in motion.
func (p *Plan) Effects(key string) []impact.Effect {
	if p.Impact == nil {
		return nil
	}
	return p.Impact.Effects[key]
}

// Blocker is a reason a confirmed purge would be refused, with the way out.
type Blocker struct {
	Keys   []string `json:"keys"`
	Reason string   `json:"reason"`
	WayOut string   `json:"wayOut"`
	// Flag is the option that takes the keys anyway (part of WayOut), as
	// the refusal was made: flagnames.AcceptSingleWitness for ghost
	// verdicts on one witness, else the refused effects' impact.Effect.WayOut
	// (impact.RetainVolumesFlag, or impact.AcceptImpactFlag and a kind).
	Flag string `json:"flag"`
}

// Blockers lists what stops this plan from being carried out.
func (p *Plan) Blockers() []Blocker {
	var out []Blocker
	if !p.AcceptSingleWitness {
		var keys []string
		why := map[string]bool{}
		var whys []string
		for _, t := range p.Targets {
			if t.SingleWitness {
				keys = append(keys, t.Key)
				if w := t.Witnesses(); !why[w] {
					why[w] = true
					whys = append(whys, w)
				}
			}
		}
		if len(keys) > 0 {
			out = append(out, Blocker{Keys: keys,
				Reason: fmt.Sprintf("%s on one witness only, with nobody to confirm %s: %s", plural.Verb(len(keys), "ghost verdict", "rests", "rest"), plural.Them(len(keys)), strings.Join(whys, "; ")),
				WayOut: "let the API server confirm them (check --kubeconfig and that it answers), or, if you have checked them yourself, add " + flagnames.AcceptSingleWitness,
				Flag:   flagnames.AcceptSingleWitness})
		}
	}
	if b, ok := p.retainWithoutAPI(); ok {
		out = append(out, b)
	}
	if p.Impact != nil {
		refused := p.Impact.Refused(p.ImpactOptions)
		byWay := map[string]*Blocker{}
		var order []string
		keys := make([]string, 0, len(refused))
		for k := range refused {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, e := range refused[k] {
				b, ok := byWay[e.WayOut]
				if !ok {
					b = &Blocker{Reason: fmt.Sprintf("deleting %s sets off what a restore cannot undo: %s", k, e.Summary), WayOut: wayOut(e), Flag: e.WayOut}
					byWay[e.WayOut] = b
					order = append(order, e.WayOut)
				}
				if !contains(b.Keys, k) {
					b.Keys = append(b.Keys, k)
				}
			}
		}
		for _, w := range order {
			b := byWay[w]
			if n := len(b.Keys) - 1; n > 0 {
				b.Reason += " (and " + plural.Of(n, "more key") + ", listed)"
			}
			out = append(out, *b)
		}
	}
	return out
}

// retainWithoutAPI is the blocker of a plan that sets volumes to Retain
// (impact.RetainVolumesFlag) when it was worked out with no API server:
// the Retain goes through it, so the purge cannot be carried out as
// planned. It has no Flag: no option takes the keys without the API server.
func (p *Plan) retainWithoutAPI() (Blocker, bool) {
	if p.Impact == nil || !p.ImpactOptions.RetainVolumes || p.readers == nil || p.readers.API != nil {
		return Blocker{}, false
	}
	var keys []string
	for k, effects := range p.Impact.Effects {
		for _, e := range effects {
			if e.DestroysVolume() && !contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return Blocker{}, false
	}
	sort.Strings(keys)
	return Blocker{Keys: keys,
		Reason: impact.RetainVolumesFlag + " sets each bound PersistentVolume to reclaim policy Retain through the API server before its claim is deleted, and this run has no API server (not reached, or --no-api)",
		WayOut: "let regghost reach the API server (check --kubeconfig and that it answers) and run purge again; or set the PersistentVolumes' reclaim policy to Retain yourself, then run purge again without " + impact.RetainVolumesFlag}, true
}

// BlockerEffects returns, by key, the irreversible effects that b refuses:
// those its Flag lets go ahead, in the order the impact lists them. It is
// nil for a blocker that is not about effects (a single witness).
func (p *Plan) BlockerEffects(b Blocker) map[string][]impact.Effect {
	if p.Impact == nil || b.Flag == "" {
		return nil
	}
	refused := p.Impact.Refused(p.ImpactOptions)
	var out map[string][]impact.Effect
	for _, k := range b.Keys {
		for _, e := range refused[k] {
			if e.WayOut != b.Flag {
				continue
			}
			if out == nil {
				out = map[string][]impact.Effect{}
			}
			out[k] = append(out[k], e)
		}
	}
	return out
}

// wayOut says how to go ahead despite an irreversible effect.
func wayOut(e impact.Effect) string {
	if e.Kind == impact.StorageDestroyed {
		return "add " + impact.RetainVolumesFlag + ": each bound PersistentVolume is set to reclaim policy Retain through the API server first (its key in the verified backup), so the volume and its data stay and a restore binds the claim again"
	}
	return "if that is what you want, add " + e.WayOut
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Refusal is the one-line error for a plan that must not be carried out.
func (p *Plan) Refusal() error {
	b := p.Blockers()
	if len(b) == 0 {
		return nil
	}
	// One short line: the plan printed above says why, whole.
	parts := make([]string, len(b))
	for i, x := range b {
		keys, verb := x.Keys[0], " needs "
		if n := len(x.Keys) - 1; n > 0 {
			keys, verb = keys+" and "+plural.Of(n, "more key"), " need "
		}
		if x.Flag == "" {
			parts[i] = keys + ": " + x.Reason
			continue
		}
		parts[i] = keys + verb + x.Flag
	}
	return fmt.Errorf("%w as the plan above says (%s); nothing was changed", ErrRefused, strings.Join(parts, "; "))
}

// ErrRefused is returned (wrapped) when a selection asks for something a
// purge must not do.
var ErrRefused = errors.New("refused")

// NewPlan selects what to purge from a fresh scan report.
func NewPlan(rep *etcdscan.Report, sel Selector) (*Plan, error) {
	if sel.Namespace == "" && len(sel.Keys) == 0 {
		return nil, fmt.Errorf("%w: purge needs --namespace or exact keys as arguments; a purge of the whole keyspace is not allowed", ErrRefused)
	}
	for _, c := range sel.ForceClasses {
		if c.Ghost() {
			return nil, fmt.Errorf("%w: --force-class %s: ghosts are purged without it; it only admits suspect classes", ErrRefused, c)
		}
		if c == etcdscan.ClassDisputed {
			return nil, fmt.Errorf("%w: --force-class %s: etcd and the API server disagree about these objects; settle the disagreement (the reason says both answers) before deleting anything", ErrRefused, c)
		}
	}
	p := &Plan{Prefix: rep.Prefix, Revision: rep.Revision, Scope: scope(sel), AcceptSingleWitness: sel.AcceptSingleWitness}
	// Only the findings of the keys asked for are kept: a report may hold
	// more findings than memory (etcdscan spills them).
	byKey := map[string]etcdscan.Finding{}
	if len(sel.Keys) > 0 {
		wanted := map[string]bool{}
		for _, k := range sel.Keys {
			wanted[k] = true
		}
		err := rep.Each(func(f *etcdscan.Finding) error {
			if wanted[f.Key] {
				byKey[f.Key] = *f
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	allowed := func(f etcdscan.Finding) bool {
		if f.Has(etcdscan.ClassDisputed) {
			return false
		}
		if f.Ghost {
			return true
		}
		for _, c := range sel.ForceClasses {
			if f.Has(c) {
				return true
			}
		}
		return false
	}
	if len(sel.Keys) > 0 {
		seen := map[string]bool{}
		for _, key := range sel.Keys {
			k, err := etcdscan.ParseKey(rep.Prefix, key)
			if err != nil {
				return nil, fmt.Errorf("%w: %s is not the key of one object (prefixes are never purged): %v", ErrRefused, key, err)
			}
			if sel.Namespace != "" && k.Namespace != sel.Namespace {
				return nil, fmt.Errorf("%w: %s is not in namespace %s", ErrRefused, key, sel.Namespace)
			}
			f, ok := byKey[key]
			if !ok {
				return nil, fmt.Errorf("%w: %s is not a ghost (the scan found nothing wrong with it, or it does not exist)", ErrRefused, key)
			}
			if f.Has(etcdscan.ClassDisputed) {
				return nil, fmt.Errorf("%w: %s is disputed, not a ghost: %s", ErrRefused, key, f.Reason())
			}
			if !allowed(f) {
				if f.Has(etcdscan.ClassStuckTerminating) && f.Namespace != "" {
					// unstick ends that safely; a purge skips what the
					// finalizers guard.
					return nil, fmt.Errorf("%w: %s is stuck terminating on its finalizers, not a ghost: `regghost unstick namespace %s` ends that through the API server; to delete it from etcd anyway, skipping what its finalizers guard, add --force-class %s", ErrRefused, key, f.Namespace, f.Classes[0])
				}
				return nil, fmt.Errorf("%w: %s is a %s suspect, not a ghost; add --force-class %s to purge it", ErrRefused, key, f.Classes[0], f.Classes[0])
			}
			if !seen[key] {
				seen[key] = true
				p.Targets = append(p.Targets, f)
			}
		}
	} else {
		err := rep.Each(func(f *etcdscan.Finding) error {
			if f.Namespace == sel.Namespace && allowed(*f) {
				p.Targets = append(p.Targets, *f)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if sel.Reviewed != nil {
		if err := p.restrictTo(sel); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// restrictTo keeps only the targets the reviewed report lists, unchanged.
// Reviewed keys outside the selection are not this purge's business.
func (p *Plan) restrictTo(sel Selector) error {
	reviewed := sel.Reviewed
	inSelection := func(f etcdscan.Finding) bool {
		if sel.Namespace != "" && f.Namespace != sel.Namespace {
			return false
		}
		if len(sel.Keys) == 0 {
			return true
		}
		for _, k := range sel.Keys {
			if k == f.Key {
				return true
			}
		}
		return false
	}
	if reviewed.Prefix != p.Prefix {
		return fmt.Errorf("%w: the reviewed scan is of prefix %s, not %s", ErrRefused, reviewed.Prefix, p.Prefix)
	}
	now := map[string]etcdscan.Finding{}
	for _, f := range p.Targets {
		now[f.Key] = f
	}
	var kept []etcdscan.Finding
	err := reviewed.Each(func(rf *etcdscan.Finding) error {
		r := *rf
		if !inSelection(r) {
			return nil
		}
		f, ok := now[r.Key]
		switch {
		case !ok:
			if r.Ghost {
				p.Skipped = append(p.Skipped, etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.SkippedChanged, Detail: "no longer a ghost in this selection (or gone) since the reviewed scan; left alone"})
			}
		case f.ModRevision != r.ModRevision:
			p.Skipped = append(p.Skipped, etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.SkippedChanged,
				Detail: fmt.Sprintf("changed since the reviewed scan (mod revision %d, now %d); left alone", r.ModRevision, f.ModRevision)})
		default:
			kept = append(kept, f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.Targets = kept
	return nil
}

func scope(sel Selector) string {
	var parts []string
	if sel.Namespace != "" {
		parts = append(parts, "namespace "+sel.Namespace)
	}
	if len(sel.Keys) == 1 {
		parts = append(parts, "key "+sel.Keys[0])
	} else if len(sel.Keys) > 1 {
		parts = append(parts, plural.Of(len(sel.Keys), "key"))
	}
	return strings.Join(parts, ", ")
}
