package render

import (
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/migrate"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/unstick"
)

// UnstickQuestion is the question before a confirmed unstick: it names everything the plan changes: the
// dangling APIServices it deletes and the finalizers it removes.
func UnstickQuestion(a *unstick.Analysis) string {
	if len(a.DeleteAPIServices) == 0 {
		return fmt.Sprintf("Remove the finalizers of %s through the API server?", plural.Of(a.Removable(), "object"))
	}
	n := len(a.DeleteAPIServices)
	which := plural.Of(n, "dangling APIService")
	if len(a.DeleteUnavailable) > 0 {
		which = plural.Of(n, "APIService") + " (" + strings.Join(a.DeleteUnavailable, ", ") + ": " + plural.Pick(n, "its", "their") + " backend down)"
	}
	if a.Nudge != nil {
		which += ", then " + a.Nudge.Describe("annotate")
		if a.Removable() == 0 {
			which += ","
		}
	}
	if a.Removable() == 0 {
		return fmt.Sprintf("Delete %s through the API server?", which)
	}
	return fmt.Sprintf("Delete %s, then remove the finalizers of %s, through the API server?", which, plural.Of(a.Removable(), "object"))
}

// MigrateQuestion is the question before a confirmed migrate: it names
// what the plan changes, or only the narrowing of storedVersions when that
// is all it does (pruneOnly).
func MigrateQuestion(plan *migrate.Census, narrow migrate.StoredVersionsChange, pruneOnly bool) string {
	if pruneOnly {
		return fmt.Sprintf("Narrow status.storedVersions of CustomResourceDefinition %s from [%s] to [%s]?", narrow.CRD, strings.Join(narrow.From, ", "), strings.Join(narrow.To, ", "))
	}
	q := fmt.Sprintf("Rewrite %s of %s through the API server", plural.Of(len(plan.Rewrite), "object"), plan.Resource)
	if s := migrate.Stranded(plan); len(s) > 0 {
		q = fmt.Sprintf("List %s again in CustomResourceDefinition %s, then r%s, then remove it again", strings.Join(s, ", "), plan.Target.CRD.Name, q[1:])
	}
	return q + "?"
}
