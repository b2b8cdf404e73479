package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/history"
	"github.com/regghost/regghost/pkg/resolve"
)

// HistoryRequest is what `regghost history` asks for: the revisions of a
// Selection, or of an object named as kubectl names one (Target: TYPE/NAME
// or TYPE NAME, in Namespace), from revision From on (0: the earliest
// held).
type HistoryRequest struct {
	Selection history.Selection
	Target    []string
	Namespace string
	From      int64
}

// NotHeldError is an object named as kubectl names one that has no
// revision held: a typo is an error, never an empty history.
type NotHeldError struct {
	Target string
	// Nearest are the names beside it that etcd holds.
	Nearest []string
}

func (e *NotHeldError) Error() string {
	msg := fmt.Sprintf("%s: no revision of it is held and nothing of that name is in etcd", e.Target)
	if len(e.Nearest) > 0 {
		msg += "; did you mean " + strings.Join(e.Nearest, ", ") + "?"
	}
	return msg
}

// History reads the revisions the live etcd, or the db file of --db (what
// the file holds is said as a notice), holds of what req names, each value
// decoded (decrypted first). An object named as kubectl names one is
// resolved to its key first: one no type or key matches is
// resolve.ErrTarget, one with no revision held a *NotHeldError.
func (s *Settings) History(ctx context.Context, req HistoryRequest) (*history.History, *dbfile.Info, error) {
	dec, err := s.Decrypter(ctx)
	if err != nil {
		return nil, nil, err
	}
	opts := history.Options{From: req.From, Decode: func(ctx context.Context, key string, value []byte) (*decode.Object, error) {
		return decrypt.DecodeMeta(ctx, dec, s.Prefix, key, value)
	}}
	sel := req.Selection
	var nearest func(key string) error
	if req.Target != nil {
		store, closeStore, err := s.OpenStore(ctx, Reads{PageSize: 1, Stream: true})
		if err != nil {
			return nil, nil, err
		}
		defer closeStore()
		key, err := s.targetKey(ctx, store, req.Target, req.Namespace)
		if err != nil {
			return nil, nil, err
		}
		sel = history.Selection{Registry: s.Prefix, Key: key}
		nearest = func(key string) error {
			dir := key[:strings.LastIndex(key, "/")+1]
			near, err := ClosestUnder(ctx, store, dir, strings.TrimPrefix(key, dir))
			if err != nil {
				return err
			}
			return &NotHeldError{Target: strings.Join(req.Target, " "), Nearest: near}
		}
	}
	var h *history.History
	var info *dbfile.Info
	if s.DB != "" {
		f, err := dbfile.OpenFile(s.DB)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		i := f.Info()
		info = &i
		s.Notices.Info(i.String())
		if h, err = history.FromFile(ctx, f, sel, opts); err != nil {
			return nil, nil, err
		}
	} else {
		ctx, etcd, done, err := s.Bounded(ctx)
		if err != nil {
			return nil, nil, err
		}
		defer done()
		if h, err = history.FromEtcd(ctx, etcd, sel, opts); err != nil {
			return nil, nil, err
		}
	}
	if nearest != nil && len(h.Events) == 0 {
		return nil, nil, nearest(sel.Key)
	}
	return h, info, nil
}

// targetKey is the key of an object named as kubectl names one. A key
// under the registry (ranges/serviceips, masterleases/IP) is taken as one
// where etcd holds keys under its first segment.
func (s *Settings) targetKey(ctx context.Context, store etcdscan.Store, target []string, namespace string) (string, error) {
	key, err := resolve.Target(ctx, store, s.Prefix, target, namespace)
	if errors.Is(err, resolve.ErrTarget) && len(target) == 1 && namespace == "" {
		first, _, _ := strings.Cut(target[0], "/")
		dir, held := s.Prefix+first+"/", false
		_ = store.Range(ctx, dir, etcdscan.PrefixEnd(dir), true, func(*mvccpb.KeyValue) error { held = true; return errEnough })
		if held {
			return s.Prefix + target[0], nil
		}
	}
	return key, err
}
