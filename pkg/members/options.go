package members

import (
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/session"
)

// When the keys are compared one by one.
const (
	// KeysAuto compares the keys when the hashes do not show that every
	// member agrees.
	KeysAuto = "auto"
	// KeysAlways compares the keys even when every hash agrees.
	KeysAlways = "always"
	// KeysNever compares the hashes, leases and member lists only.
	KeysNever = "never"
	// KeysOnMismatch compares the keys unless the hashes show the members
	// agree: serve's comparison, cheap while they agree.
	KeysOnMismatch = "mismatch"
)

// KeysModes are the values of Options.Keys.
var KeysModes = []string{KeysAuto, KeysAlways, KeysNever, KeysOnMismatch}

// Which HashKV the members are asked for. Every member is hashed on its
// own, one after the other: a member computing a hash holds its backend's
// read lock for the whole scan, and commits no write meanwhile.
const (
	// HashCompaction asks for each member's hash at the newest revision
	// the members compacted at: etcd keeps the hash it computed during
	// that compaction (the hash its own compaction check compares), so a
	// member that kept it answers at once; one that did not (it started
	// since) computes it, scanning its keyspace.
	HashCompaction = "compaction"
	// HashFull asks for each member's hash at the lowest current revision
	// of the members: a scan of its whole keyspace, sampled twice when
	// the first sample disagrees. It covers every write up to now.
	HashFull = "full"
	// HashNone asks for no hash: the keys decide.
	HashNone = "none"
)

// HashModes are the values of Options.Hash.
var HashModes = []string{HashCompaction, HashFull, HashNone}

// Defaults of Options.
const (
	// DefaultInterval is the time between the two hash samples.
	DefaultInterval = 2 * time.Second
	// DefaultMaxKeys is how many differing keys are listed one by one.
	DefaultMaxKeys = 1000
	// RecheckLimit is how many differing keys a comparison of current
	// values reads again, to tell a write in flight from a difference.
	RecheckLimit = 10000
	// DefaultMaxKeysPerSecond is the highest pace of each member's
	// keyspace read. Below it each member's read is paced by the
	// member's own latency (pkg/pace: a probe's, measured idle before the
	// read and every 100 ms during it; the pace starts at 1,000 keys a
	// second, is halved above 1.5x idle and raised by 1,000 below 1.2x).
	// A fixed 25,000 kept another client's writes at p99 1.4x idle in
	// one run on 2 cores (bench/results.md) and 2.5x in a later one: no
	// fixed pace suits every machine.
	DefaultMaxKeysPerSecond = 25000
	// DivergenceSlack is how far apart two members' revisions may be
	// beyond what their applied indexes allow before their revisions are
	// called diverged (a Status reads its revision and applied index at
	// slightly different instants).
	DivergenceSlack = 1000
)

// Reads is how the members' keyspaces are read by default: scan's pages
// and streams, each member's paced by its latency up to
// DefaultMaxKeysPerSecond.
func Reads() session.Reads {
	r := session.ScanReads()
	r.MaxKeysPerSecond = DefaultMaxKeysPerSecond
	return r
}

// Options say how to reach the members and how to compare them.
type Options struct {
	// Client reaches the cluster through any member: the member list and
	// the alarms.
	Client *clientv3.Client
	// Config is the client configuration each member's own client is made
	// from: the same TLS files and credentials, its endpoint alone.
	Config clientv3.Config
	// Registry is the prefix kube-apiserver stores under: keys below it
	// are named by resource, namespace and name.
	Registry string
	// Reads say how a keyspace is read: page size, streaming, and the
	// highest pace (0: unpaced), below which each member's read is paced
	// by that member's latency (pkg/pace).
	Reads session.Reads
	// Interval is the time between the two hash samples (DefaultInterval
	// when 0).
	Interval time.Duration
	// Timeout bounds each member's Status and small reads (5s when 0).
	Timeout time.Duration
	// Keys is KeysAuto (""), KeysAlways, KeysNever or KeysOnMismatch.
	Keys string
	// Hash is HashCompaction (""), HashFull or HashNone.
	Hash string
	// Current compares the current values from the start, without a
	// shared revision.
	Current bool
	// MaxKeys is how many differing keys are listed one by one
	// (DefaultMaxKeys when 0; -1: all).
	MaxKeys int
	// Notices, when set, is told each step in a few words, and why the
	// lock is waited for.
	Notices notice.Func
	// Cluster is the cluster as Setup reached it: its ID, its member
	// list, and which endpoint given answered as which member.
	Cluster *etcdmembers.Cluster
	// Fallback are endpoints Setup tries when none given answers, or
	// only a learner does: the other members' client URLs a replacement
	// recorded (replace's second run, on the node of the member it
	// replaces, whose etcd is down or a learner).
	Fallback *Fallback
}

func (o *Options) interval() time.Duration {
	if o.Interval > 0 {
		return o.Interval
	}
	return DefaultInterval
}

func (o *Options) hash() string {
	if o.Hash == "" {
		return HashCompaction
	}
	return o.Hash
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Second
}

func (o *Options) maxKeys() int {
	switch {
	case o.MaxKeys == 0:
		return DefaultMaxKeys
	case o.MaxKeys < 0:
		return int(^uint(0) >> 1)
	}
	return o.MaxKeys
}

func (o *Options) progress(format string, args ...any) {
	o.Notices.Info(fmt.Sprintf(format, args...))
}

// Validate checks the options a person gives.
func (o *Options) Validate() error {
	switch o.Keys {
	case "", KeysAuto, KeysAlways, KeysNever, KeysOnMismatch:
	default:
		return fmt.Errorf("keys %q: want one of %s", o.Keys, strings.Join(KeysModes, ", "))
	}
	switch o.Hash {
	case "", HashCompaction, HashFull, HashNone:
	default:
		return fmt.Errorf("hash %q: want one of %s", o.Hash, strings.Join(HashModes, ", "))
	}
	if o.Hash == HashNone && o.Keys == KeysNever {
		return fmt.Errorf("with no hash and no keys there is nothing to compare")
	}
	if o.Current && o.Keys == KeysNever {
		return fmt.Errorf("current values are a way to compare the keys, which keys %q leaves out", KeysNever)
	}
	if o.MaxKeys < -1 {
		return fmt.Errorf("max keys must be -1 (all), 0 (the default) or more, got %d", o.MaxKeys)
	}
	return nil
}
