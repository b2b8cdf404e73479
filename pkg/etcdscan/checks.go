package etcdscan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/plural"
)

// typesCheck reports how the types stored under each prefix were decided.
func (s *scan) typesCheck() Check {
	c := Check{Name: "served types", Done: true, Note: "from " + s.rep.Catalog}
	if s.opts.Served == nil {
		c.Done = false
		c.Note += "; the API server's discovery was not asked, so whether a type is served now is unknown"
	} else if failed := s.opts.Served.FailedGroups(); len(failed) > 0 {
		c.Done = false
		c.Note += "; discovery failed for " + strings.Join(failed, ", ") + ": their prefixes were not judged"
	}
	if len(s.foreignKeys) > 0 {
		var parts []string
		for why, n := range s.foreignKeys {
			parts = append(parts, fmt.Sprintf("%s (%s)", plural.Of(n, "key"), why))
		}
		sort.Strings(parts)
		c.Note += "; not judged: " + strings.Join(parts, "; ")
	}
	return c
}

// namespacesCheck reports whether orphaned namespaces could be judged.
func (s *scan) namespacesCheck() Check {
	key := s.opts.Prefix + "namespaces/default"
	if !s.holdsNamespaces {
		return Check{Name: "namespaces", Done: false, Note: fmt.Sprintf(
			"this keyspace has no %s key, so it does not hold the cluster's namespaces (an --etcd-servers-overrides etcd, or a wrong --prefix): %s not judged",
			key, plural.Verb(s.unjudgedNS, "namespaced key", "was", "were"))}
	}
	return Check{Name: "namespaces", Done: true, Note: "namespace keys read at revision " + fmt.Sprint(s.rep.Revision)}
}

// encryptionCheck reports what became of encrypted values; classes counts
// the findings of each class.
func (s *scan) encryptionCheck(classes map[Class]int) Check {
	total := 0
	for _, n := range s.rep.Encrypted {
		total += n
	}
	c := Check{Name: "encrypted values", Done: true}
	switch {
	case total == 0:
		c.Note = "none"
	case s.opts.Decrypter != nil && s.opts.API != nil:
		c.Note = fmt.Sprintf("%d encrypted, %d decrypted with --encryption-provider-config; the rest read back through the API server", total, s.rep.Decrypted)
	case s.opts.Decrypter != nil:
		c.Note = fmt.Sprintf("%d encrypted, %d decrypted with --encryption-provider-config", total, s.rep.Decrypted)
		if undecided := total - s.rep.Decrypted - classes[ClassEncryptedUnknown]; undecided > 0 {
			c.Done = false
			c.Note += fmt.Sprintf("; %d (kms) could not be judged without the API server", undecided)
		}
	case s.opts.API != nil:
		c.Note = fmt.Sprintf("%d encrypted, read back through the API server", total)
		c.Done = s.unprobed == 0
	default:
		c.Done = false
		c.Note = fmt.Sprintf("%s not judged: no --encryption-provider-config and no API server", plural.Of(total, "encrypted value"))
	}
	return c
}
