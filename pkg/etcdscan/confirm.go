package etcdscan

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
)

// confirmation is a value etcd alone cannot judge; the API server is asked.
type confirmation struct {
	key   string
	res   catalog.Resource
	ns    string
	name  string
	class Class
	enc   decode.Encryption
	// f is the finding so far (encrypted values are only recorded if the API
	// server cannot read them).
	f Finding
}

// confirmWithAPI asks the API server to read each undecodable or encrypted
// value. An encrypted value the API server reads is healthy; one it cannot
// read is an encrypted-unknown ghost. An undecodable value it reads is not a
// ghost after all.
func (s *scan) confirmWithAPI(ctx context.Context) {
	unchecked := 0
	if len(s.confirm) == 0 {
		return
	}
	if s.opts.API == nil {
		s.rep.Checks = append(s.rep.Checks, Check{Name: "api server read-back", Done: false,
			Note: fmt.Sprintf("%d undecodable or encrypted values not confirmed: %s", len(s.confirm), s.opts.APIUnavailable)})
		return
	}
	for i, c := range s.confirm {
		if i >= s.opts.APICheckLimit {
			unchecked = len(s.confirm) - i
			break
		}
		err := s.opts.API.Read(ctx, c.res, c.ns, c.name)
		switch c.class {
		case ClassEncryptedUnknown:
			if err == nil {
				continue
			}
			if !apiCannotRead(err) {
				unchecked++
				continue
			}
			f := c.f
			f.add(ClassEncryptedUnknown, fmt.Sprintf("encrypted with %s key %q and the API server cannot read it: %v", c.enc.Provider, c.enc.KeyName, err))
			s.record(f).add(ClassEncryptedUnknown, f.Reasons[0])
		case ClassUndecodable:
			i, ok := s.index[c.key]
			if !ok {
				continue
			}
			f := &s.rep.Findings[i]
			switch {
			case err == nil:
				f.remove(ClassUndecodable)
			case apiCannotRead(err):
				for j, x := range f.Classes {
					if x == ClassUndecodable {
						f.Reasons[j] += "; the API server cannot read it either: " + err.Error()
					}
				}
			default:
				unchecked++
			}
		}
	}
	note := fmt.Sprintf("%d undecodable or encrypted values read back through the API server", len(s.confirm)-unchecked)
	if unchecked > 0 {
		note += fmt.Sprintf("; %d not confirmed (limit %d or API errors)", unchecked, s.opts.APICheckLimit)
	}
	s.rep.Checks = append(s.rep.Checks, Check{Name: "api server read-back", Done: unchecked == 0, Note: note})
}

// apiCannotRead reports whether an API error means the API server could not
// read the stored object (as opposed to a failure to ask it).
func apiCannotRead(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsNotFound(err) || apierrors.ReasonForError(err) == "StorageReadError"
}
