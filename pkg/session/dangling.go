package session

import (
	"context"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/decrypt"
)

// DanglingFix is one run of dangling --confirm: the fixes planned from a
// read's scan, and what they are written with.
type DanglingFix struct {
	Fixes []dangling.Fix
	// Dynamic writes through the API server (Read.Dynamic).
	Dynamic dynamic.Interface
	// Namespace is the run's scope ("": every namespace's references).
	Namespace  string
	BackupRoot string
	Now        func() time.Time
}

// FixDangling applies f's fixes through the API server, each key backed
// up first, over a connection to etcd bounded by --command-timeout; r is
// the read they were planned from (its decryption reads the backups).
func (s *Settings) FixDangling(ctx context.Context, r *Read, f DanglingFix) (*dangling.Result, error) {
	ctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	scope := "dangling references"
	if f.Namespace != "" {
		scope += " of namespace " + f.Namespace
	}
	return dangling.Apply(ctx, f.Fixes, dangling.FixOptions{Client: etcd, Dynamic: f.Dynamic, BackupRoot: f.BackupRoot, Registry: s.Prefix, Scope: scope, Now: f.Now,
		Notices: s.Notices, Decrypt: decrypt.Namespaces(r.Decrypter)})
}
