package help

import (
	"regexp"
	"strings"
)

// overridesPage is the page that says what each override lets through and
// what it risks; a refusal that names an override links to its section.
const overridesPage = "https://github.com/regghost/regghost/blob/main/docs/overrides.md"

// overrideFlags are the flags that lift a refusal.
var overrideFlags = regexp.MustCompile(`--(accept-single-witness|accept-impact|force-class|retain-volumes|accept-managed|delete-unavailable-apiservice|into-recreated|other-cluster-grants|other-cluster|all-absent|with-live|yes)\b`)

// WithOverrideLink adds to a refusal's line where the override it names is
// explained, with what it risks (the first one it names).
func WithOverrideLink(line string) string {
	m := overrideFlags.FindStringSubmatch(line)
	if m == nil || strings.Contains(line, overridesPage) {
		return line
	}
	return line + " (what " + m[0] + " risks: " + overridesPage + "#" + m[1] + ")"
}
