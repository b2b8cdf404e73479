package session

import (
	"context"
	"errors"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// errEnough stops a range read that has what it needs.
var errEnough = errors.New("enough")

// KeysFrom lists the keys starting with prefix, trim cut from each, at
// most limit of them (0: all), keys only, within ctx: what a shell
// completes (nothing when etcd does not answer in time).
func (s *Settings) KeysFrom(ctx context.Context, prefix, trim string, limit int) []string {
	store, closeStore, err := s.OpenStore(ctx, Reads{PageSize: etcdscan.DefaultPageSize})
	if err != nil {
		return nil
	}
	defer closeStore()
	var out []string
	_ = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), true, func(kv *mvccpb.KeyValue) error {
		out = append(out, strings.TrimPrefix(string(kv.Key), trim))
		if limit > 0 && len(out) >= limit {
			return errEnough
		}
		return nil
	})
	return out
}

// MemberNames lists etcd's members by name, within ctx; nothing when
// etcd does not answer in time.
func (s *Settings) MemberNames(ctx context.Context) []string {
	cli, err := s.Connect(ctx)
	if err != nil {
		return nil
	}
	defer cli.Close()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range resp.Members {
		if m.Name != "" {
			out = append(out, m.Name)
		}
	}
	return out
}
