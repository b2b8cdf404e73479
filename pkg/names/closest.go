// Package names finds, for a name the user typed that exists nowhere, the
// names that do exist and are closest to it: a typo is an error that says
// what was meant, never an empty result that looks like success.
package names

import (
	"sort"
	"strings"
)

// Closest returns at most n of have nearest to name: those within an edit
// distance of a third of name's length (at least 2), or that start or end
// with it, nearest first.
func Closest(have []string, name string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	limit := max(len(name)/3, 2)
	var out []cand
	seen := map[string]bool{}
	for _, h := range have {
		if h == name || seen[h] {
			continue
		}
		seen[h] = true
		d := distance(h, name)
		if d <= limit || (len(name) >= 3 && (strings.HasPrefix(h, name) || strings.HasSuffix(h, name))) {
			out = append(out, cand{h, d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].name < out[j].name
	})
	var names []string
	for i := 0; i < len(out) && i < n; i++ {
		names = append(names, out[i].name)
	}
	return names
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
