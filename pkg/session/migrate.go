package session

import (
	"context"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/migrate"
)

// MigrateSource is what migrate reads through r: its keyspace, decryption
// and API server, a fresh read of etcd for each count again, and, live, a
// connection bounded by --command-timeout for the protected writes.
func (s *Settings) MigrateSource(r *Read) migrate.Source {
	src := migrate.Source{Store: r.Store, Prefix: s.Prefix, Decrypter: r.Decrypter, API: r.API, Why: r.Why,
		OpenStore: func(ctx context.Context) (etcdscan.Store, func(), error) { return s.OpenStore(ctx, ScanReads()) }}
	if !r.DB {
		src.Connect = s.Bounded
	}
	return src
}
