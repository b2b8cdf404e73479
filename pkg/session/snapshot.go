package session

import (
	"context"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/snapshot"
)

// SaveSnapshot saves a verified snapshot of etcd (a logical one of kine)
// to path; it returns the endpoint it came from.
func (s *Settings) SaveSnapshot(ctx context.Context, path string) (*backup.SnapshotInfo, string, error) {
	ctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return nil, "", err
	}
	defer done()
	cfg, err := s.Etcd.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.Endpoints = etcd.Endpoints()
	return snapshot.TakeSnapshot(ctx, etcd, cfg, path, 0)
}
