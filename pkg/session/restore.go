package session

import (
	"context"
	"path/filepath"

	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/repair"
)

// Restorer readies r (a backup, its path, the choices given) to put the
// backup's keys back, or undo a recovery, through the protected write: it
// connects to etcd, bounded by --command-timeout (the context returned),
// and fills in the decryption, the API server's content reader, the
// registry prefix, etcd's request limit and the audit directory (the
// backup's own when none is given). done releases the connection.
func (s *Settings) Restorer(ctx context.Context, r *repair.Restorer) (_ context.Context, done func(), err error) {
	if r.AuditDir == "" {
		r.AuditDir = filepath.Dir(r.Path)
	}
	ctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return nil, nil, err
	}
	dec, err := s.Decrypter(ctx)
	if err == nil {
		r.Options.Reader, err = s.ContentReader(ctx)
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	r.Client, r.Decrypt, r.Notices, r.Options.Prefix = etcd, decrypt.Namespaces(dec), s.Notices, s.Prefix
	r.Pacing.MaxRequestBytes = s.Etcd.MaxRequestBytes
	return ctx, done, nil
}
