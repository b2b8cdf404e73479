// Package docs holds the pages the regghost binary carries with it: what
// each override lets through and risks (`regghost overrides FLAG`), so a
// refusal points to something every copy of the binary has.
package docs

import _ "embed"

// Overrides is overrides.md.
//
//go:embed overrides.md
var Overrides string
