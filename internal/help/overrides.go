package help

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/regghost/regghost/docs"
)

// overridesCommand shows what each override lets through and what it
// risks, from the page the binary carries (docs/overrides.md); a refusal
// that names an override points to its section.
const overridesCommand = "regghost overrides "

// overrideFlags are the flags that lift a refusal.
var overrideFlags = regexp.MustCompile(`--(accept-single-witness|accept-impact|force-class|retain-volumes|accept-managed|delete-unavailable-apiservice|into-recreated|other-cluster-grants|other-cluster|all-absent|with-live|yes)\b`)

// WithOverrideLink adds to a refusal's line where the override it names is
// explained, with what it risks (the first one it names).
func WithOverrideLink(line string) string {
	m := overrideFlags.FindStringSubmatch(line)
	if m == nil || strings.Contains(line, overridesCommand) {
		return line
	}
	return line + " (what " + m[0] + " risks: " + overridesCommand + m[1] + ")"
}

// anchors are the HTML anchors the page keeps before its sections.
var anchors = regexp.MustCompile(`(?m)^<a id="[a-z-]+"></a>\n?`)

// Override is the section of docs/overrides.md on flag (with or without
// its dashes), or the whole page for "".
func Override(flag string) (string, error) {
	page := docs.Overrides
	if flag == "" {
		return page, nil
	}
	flag = strings.TrimLeft(flag, "-")
	start := strings.Index(page, "\n## --"+flag+"\n")
	if start < 0 {
		return "", fmt.Errorf("no override --%s (regghost overrides prints every one)", flag)
	}
	section := page[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	// The next section's anchor is not this one's.
	section = strings.TrimRight(anchors.ReplaceAllString(section, ""), "\n") + "\n"
	return section, nil
}
