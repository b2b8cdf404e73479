package exporter

import (
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// danglingClock remembers when this exporter first saw each dangling
// reference, for those whose object does not say since when they dangle
// (only an APIService's Available condition does). A reference that is no
// longer found is forgotten, so that it starts afresh if it comes back.
type danglingClock struct {
	first map[string]time.Time
}

// danglingID names a reference, whatever its state: one whose Service went
// from down to gone has dangled since it went down.
func danglingID(d etcdscan.DanglingRef) string {
	return d.Key + "\x00" + d.Field + "\x00" + d.Target
}

// date sets Since on every reference of a good cycle that ended at now: the
// earlier of what its object says and when this exporter first saw it.
func (c *danglingClock) date(refs []etcdscan.DanglingRef, now time.Time) {
	seen := make(map[string]time.Time, len(refs))
	for i := range refs {
		id := danglingID(refs[i])
		first, ok := c.first[id]
		if !ok {
			first = now
		}
		if s := refs[i].Since; s != nil && s.Before(first) {
			first = *s
		}
		seen[id] = first
		refs[i].Since = &first
	}
	c.first = seen
}
