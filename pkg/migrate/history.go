package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// History is what the old revisions of a resource, which etcd keeps until
// it compacts them, hold under a provider or key other than the one that
// writes now: values a key removed from the configuration could no longer
// read, and plaintext that is still on disk.
type History struct {
	// From is the oldest revision etcd keeps (its compacted revision, or 1).
	From int64 `json:"from"`
	// To is the revision read up to (the census's).
	To int64 `json:"to"`
	// ByKey counts old values per provider and key.
	ByKey map[string]int `json:"byKey"`
	// Newest is the newest revision that overwrote or deleted one of them:
	// compacting etcd at it, or later, removes them all.
	Newest int64 `json:"newest,omitempty"`
}

// stall bounds the wait for anything from the watch (a server that never
// answers a progress request, such as an old kine).
const stall = 30 * time.Second

// progressFixed are the first etcd releases of each minor whose progress
// notification says a watch has caught up (Kubernetes relies on it from
// 3.4.31 and 3.5.13 on); an older one may send it before every event.
var progressFixed = map[[2]int]int{{3, 4}: 31, {3, 5}: 13}

// OldRevisions counts the old revisions of c's resource that etcd still
// keeps, up to c's revision, and that are not under c.Writer: every value
// overwritten or deleted since etcd's compacted revision, and the values
// kept at that revision that were overwritten or deleted after it. It reads
// the resource at the compacted revision, then the changes since through a
// watch, which ends at the server's progress notification.
func OldRevisions(ctx context.Context, cli *clientv3.Client, registry string, c *Census) (*History, error) {
	if c.Writer == "" {
		return nil, fmt.Errorf("old revisions are judged against the key that writes: give --encryption-provider-config")
	}
	if err := progressTrusted(ctx, cli); err != nil {
		return nil, err
	}
	start := registry + c.Target.Prefix + "/"
	end := clientv3.GetPrefixRangeEnd(start)
	if _, err := cli.Get(ctx, "\x00", clientv3.WithRev(c.Revision), clientv3.WithCountOnly()); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil, fmt.Errorf("etcd compacted past revision %d since the count: run again", c.Revision)
		}
		return nil, fmt.Errorf("read etcd at revision %d: %w", c.Revision, err)
	}
	for range 10 {
		from, err := etcdscan.CompactedRevisionAt(ctx, cli, c.Revision)
		if err != nil {
			return nil, fmt.Errorf("read etcd's compacted revision: %w", err)
		}
		h := &History{From: max(from, 1), To: c.Revision, ByKey: map[string]int{}}
		again, err := h.read(ctx, cli, start, end, c)
		if err != nil {
			return nil, fmt.Errorf("read old revisions of %s from %d to %d: %w", c.Resource, h.From, h.To, err)
		}
		if !again {
			return h, nil
		}
	}
	return nil, fmt.Errorf("read old revisions of %s: etcd compacted again at every one of 10 tries", c.Resource)
}

// read counts from h.From to h.To; again says etcd compacted past h.From
// meanwhile (start over).
func (h *History) read(ctx context.Context, cli *clientv3.Client, start, end string, c *Census) (again bool, err error) {
	// The value each key holds as the replay goes: its provider and key.
	held := map[string]string{}
	at, err := etcdscan.NewEtcdStoreAt(ctx, cli, etcdscan.DefaultPageSize, h.From)
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) || strings.Contains(err.Error(), "is compacted") {
			return true, nil
		}
		return false, err
	}
	at.SetMaxKeysPerSecond(etcdscan.DefaultMaxKeysPerSecond)
	err = at.Range(ctx, start, end, false, func(kv *mvccpb.KeyValue) error {
		held[string(kv.Key)] = c.nameOf(kv.Value)
		return nil
	})
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return true, nil
		}
		return false, err
	}
	gone := func(key string, at int64) {
		if with, ok := held[key]; ok && with != c.Writer {
			h.ByKey[with]++
			h.Newest = max(h.Newest, at)
		}
	}
	if h.From >= h.To {
		return false, nil
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	w := cli.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithRev(h.From+1))
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	heard := time.Now()
	if err := cli.RequestProgress(wctx); err != nil {
		return false, fmt.Errorf("ask etcd for watch progress: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
			if time.Since(heard) > stall {
				return false, fmt.Errorf("etcd sent nothing for %s and never said the watch caught up", stall)
			}
			// etcd answers a progress request once the watch has caught
			// up; ask until it has.
			if err := cli.RequestProgress(wctx); err != nil {
				return false, fmt.Errorf("ask etcd for watch progress: %w", err)
			}
		case resp, ok := <-w:
			if !ok {
				return false, fmt.Errorf("the watch closed")
			}
			heard = time.Now()
			if resp.CompactRevision > 0 {
				return true, nil
			}
			if err := resp.Err(); err != nil {
				return false, err
			}
			for _, ev := range resp.Events {
				kv := ev.Kv
				if kv.ModRevision > h.To {
					return false, nil
				}
				key := string(kv.Key)
				gone(key, kv.ModRevision)
				if ev.Type == clientv3.EventTypePut {
					held[key] = c.nameOf(kv.Value)
				} else {
					delete(held, key)
				}
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= h.To {
				return false, nil
			}
		}
	}
}

// statuser is what progressTrusted asks of a client: its endpoints, and
// each one's status (*clientv3.Client).
type statuser interface {
	Endpoints() []string
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
}

// progressTrusted refuses unless every endpoint the client may balance the
// watch to answers with an etcd release whose progress notification comes
// after the events it follows: during a rolling upgrade (3.5.12 beside
// 3.5.16) the watch may be served by the older member, so the first
// endpoint that answers does not speak for the others. An endpoint that
// does not answer is not judged, and so nothing is trusted.
func progressTrusted(ctx context.Context, cli statuser) error {
	var unasked []string
	for _, ep := range cli.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			unasked = append(unasked, fmt.Sprintf("%s (%v)", ep, err))
			continue
		}
		if err := progressTrustedVersion(st.Version); err != nil {
			return fmt.Errorf("etcd at %s: %w", ep, err)
		}
	}
	if len(unasked) > 0 {
		return fmt.Errorf("etcd did not say its version at %s: the watch may be served there, so old revisions are not counted", strings.Join(unasked, ", "))
	}
	return nil
}

// progressTrustedVersion judges the etcd release version.
func progressTrustedVersion(version string) error {
	if version == "" {
		return fmt.Errorf("the server does not say its etcd version (kine?), so whether its watch says when it has caught up is not known: old revisions are not counted")
	}
	var v [3]int
	for i, p := range strings.SplitN(strings.SplitN(version, "-", 2)[0], ".", 3) {
		v[i], _ = strconv.Atoi(p)
	}
	if v[0] < 3 || (v[0] == 3 && v[1] < 4) {
		return fmt.Errorf("etcd %s is too old to say when a watch has caught up: old revisions are not counted", version)
	}
	if fixed, ok := progressFixed[[2]int{v[0], v[1]}]; ok && v[2] < fixed {
		return fmt.Errorf("etcd %s may say a watch has caught up before it has (fixed in %d.%d.%d): old revisions are not counted", version, v[0], v[1], fixed)
	}
	return nil
}
