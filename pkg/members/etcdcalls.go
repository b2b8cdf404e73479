package members

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// lockBoth takes this node's lock (named after the etcd cluster ID), then
// etcd's through cli. Under an alarm (CORRUPT, NOSPACE) etcd refuses the
// etcd lock's writes: then this node's lock alone, once no regghost holds
// etcd's, and it says what that does not cover. lost is closed when
// etcd's lock is lost while held (its lease expired: etcd unreachable, or
// this process paused, for over its TTL): another regghost may take it,
// and the holder stops. It is nil (never closed) when only this node's
// lock is held, which cannot be lost.
func lockBoth(ctx context.Context, o Options, cli *clientv3.Client, cluster, what string) (unlock func(), lost <-chan struct{}, err error) {
	nodeUnlock, path, err := etcdwrite.NodeLock(cluster, what)
	if err != nil {
		return nil, nil, err
	}
	gone := make(chan struct{})
	var once sync.Once
	etcdUnlock, err := etcdwrite.Lock(ctx, cli, what, etcdwrite.WithLockNotices(o.Notices), etcdwrite.WithOnLost(func() { once.Do(func() { close(gone) }) }))
	if err == nil {
		return func() { etcdUnlock(); nodeUnlock() }, gone, nil
	}
	if !etcdwrite.IsNoSpace(err) && !strings.Contains(err.Error(), "corrupt cluster") {
		nodeUnlock()
		return nil, nil, err
	}
	if err := etcdwrite.RefuseEtcdHolder(ctx, cli); err != nil {
		nodeUnlock()
		return nil, nil, err
	}
	o.progress("an alarm makes etcd refuse regghost's lock (%s): only this node's lock %s is held; it does not stop a regghost on another node", firstLine(err), path)
	return nodeUnlock, nil, nil
}

// moveLeader moves the leadership from member (which leads) to to,
// through a client on member's endpoint (etcd takes the move from the
// leader only), and waits until to leads.
func moveLeader(ctx context.Context, o Options, r *Report, member, to string) error {
	from := memberOf(r, member)
	dest := memberOf(r, to)
	if from == nil || dest == nil {
		return fmt.Errorf("%s or %s is not in the comparison", member, to)
	}
	id, err := strconv.ParseUint(dest.ID, 16, 64)
	if err != nil {
		return fmt.Errorf("member %s's ID %q: %w", to, dest.ID, err)
	}
	cli, err := o.dial(from.Endpoint)
	if err != nil {
		return err
	}
	defer cli.Close()
	mctx, cancel := context.WithTimeout(ctx, o.timeout())
	_, err = cli.MoveLeader(mctx, id)
	cancel()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, o.timeout())
		st, err := o.Client.Status(sctx, dest.Endpoint)
		cancel()
		if err == nil && st.Leader == id {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not lead 30s after the move", to)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// transient reports whether err is one a request sent again may not meet:
// the member asked stopped or lost its leader, or the connection broke.
func transient(err error) bool {
	e := rpctypes.Error(err)
	if errors.Is(e, rpctypes.ErrStopped) || errors.Is(e, rpctypes.ErrLeaderChanged) || errors.Is(e, rpctypes.ErrNoLeader) || errors.Is(e, rpctypes.ErrTimeout) {
		return true
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// notReady reports whether err is etcd's refusal to promote a learner
// that has not caught up (or not started).
func notReady(err error) bool {
	return errors.Is(rpctypes.Error(err), rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "not in sync with leader")
}

func memberList(ctx context.Context, cli *clientv3.Client, timeout time.Duration) ([]*etcdserverpb.Member, error) {
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.MemberList(mctx)
	if err != nil {
		return nil, fmt.Errorf("read etcd's member list: %w", err)
	}
	return resp.Members, nil
}

func findByName(list []*etcdserverpb.Member, name string) *etcdserverpb.Member {
	for _, m := range list {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func findByPeers(list []*etcdserverpb.Member, peers []string) *etcdserverpb.Member {
	for _, m := range list {
		if slices.ContainsFunc(m.PeerURLs, func(p string) bool { return slices.Contains(peers, p) }) {
			return m
		}
	}
	return nil
}

// duplicateName is a name two members share, or "".
func duplicateName(list []*etcdserverpb.Member) string {
	seen := map[string]bool{}
	for _, m := range list {
		if m.Name == "" {
			continue
		}
		if seen[m.Name] {
			return m.Name
		}
		seen[m.Name] = true
	}
	return ""
}

func memberNames(list []*etcdserverpb.Member) string {
	var out []string
	for _, m := range list {
		out = append(out, orUnstarted(m.Name))
	}
	return strings.Join(out, ", ")
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
