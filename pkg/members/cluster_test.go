package members

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/session"
)

// cluster is an embedded etcd cluster (etcdtest.Cluster) whose members a
// test stops, whose db files it edits while they are stopped, and starts
// again: the way to make one member's data differ from the others' (etcd's
// corruption checks are off, as they are by default).
type cluster struct {
	*etcdtest.Cluster
	names []string
	dirs  []string
	eps   []string
	cli   *clientv3.Client
}

// startCluster runs n embedded members m0, m1, ... until the test ends.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	ec := etcdtest.StartCluster(t, n, 2000)
	return &cluster{Cluster: ec, names: ec.Names, dirs: ec.Dirs, eps: ec.Endpoints, cli: ec.Client}
}

func (c *cluster) leader(t *testing.T) int { return c.Leader(t) }

func (c *cluster) stop(i int) { c.Stop(i) }

// follower is a member other than the leader and those in not.
func (c *cluster) follower(t *testing.T, not ...int) int {
	t.Helper()
	lead := c.leader(t)
	for i := range c.names {
		if i != lead && !containsInt(not, i) {
			return i
		}
	}
	t.Fatalf("no follower left but %v", not)
	return -1
}

func containsInt(s []int, n int) bool {
	for _, v := range s {
		if v == n {
			return true
		}
	}
	return false
}

// edit stops member i, changes its db's key bucket with each edit, and
// starts it again; it waits until the member has caught up with the
// leader's applied index. The member is stopped once it holds every
// write made before (a follower may not have applied the last put yet).
func (c *cluster) edit(t *testing.T, i int, edits ...func(*testing.T, *bbolt.Bucket)) {
	t.Helper()
	ctx := context.Background()
	head, err := c.cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.Clients[i].Status(ctx, c.eps[i])
		if err == nil && st.Header.Revision >= head.Header.Revision {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not apply revision %d: %v", c.names[i], head.Header.Revision, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stop(i)
	db, err := bbolt.Open(filepath.Join(c.dirs[i], "member", "snap", "db"), 0o600, &bbolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open %s's db: %v", c.names[i], err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return fmt.Errorf("no key bucket")
		}
		for _, e := range edits {
			e(t, b)
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("edit %s's db: %v", c.names[i], err)
	}
	c.Launch(t, i)
	c.Ready(t, i)
	c.leader(t)
}

// revisionKey is etcd's key of a revision in the key bucket.
func revisionKey(main, sub int64) []byte {
	b := make([]byte, 17)
	binary.BigEndian.PutUint64(b, uint64(main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:], uint64(sub))
	return b
}

// records are the key bucket's revisions of key, oldest first.
func records(t *testing.T, b *bbolt.Bucket, key string) (revs [][]byte, kvs []*mvccpb.KeyValue) {
	t.Helper()
	err := b.ForEach(func(k, v []byte) error {
		kv := &mvccpb.KeyValue{}
		if err := proto.Unmarshal(v, kv); err != nil {
			return err
		}
		if string(kv.Key) == key {
			revs, kvs = append(revs, append([]byte{}, k...)), append(kvs, kv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return revs, kvs
}

// dropKey deletes every revision of key: the member never held it.
func dropKey(key string) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		revs, _ := records(t, b, key)
		if len(revs) == 0 {
			t.Fatalf("no revision of %s to drop", key)
		}
		for _, r := range revs {
			if err := b.Delete(r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// setValue changes the value of key's latest revision.
func setValue(key, value string) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		revs, kvs := records(t, b, key)
		if len(revs) == 0 {
			t.Fatalf("no revision of %s to change", key)
		}
		kv := kvs[len(kvs)-1]
		kv.Value = []byte(value)
		raw, err := proto.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(revs[len(revs)-1], raw); err != nil {
			t.Fatal(err)
		}
	}
}

// addKey adds a key the other members do not hold, written at the
// member's latest revision (as a second change of it: its revision does
// not move).
func addKey(key, value string) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		last, _ := b.Cursor().Last()
		main := int64(binary.BigEndian.Uint64(last[:8]))
		raw, err := proto.Marshal(&mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), CreateRevision: main, ModRevision: main, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(revisionKey(main, 99), raw); err != nil {
			t.Fatal(err)
		}
	}
}

// options are Compare's options on the cluster.
func (c *cluster) options() Options {
	return Options{Client: c.cli, Config: clientv3.Config{Endpoints: c.eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()},
		Registry: "/registry/", Reads: session.ScanReads(), Interval: 200 * time.Millisecond, Timeout: 10 * time.Second}
}
