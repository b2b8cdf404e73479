package cmd

import (
	"strings"

	"github.com/regghost/regghost/pkg/impact"
)

// acceptableKinds lists the effects --accept-impact takes, for help texts.
func acceptableKinds() string {
	names := make([]string, len(impact.Acceptable))
	for i, k := range impact.Acceptable {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
