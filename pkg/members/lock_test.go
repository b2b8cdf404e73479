package members

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestLostAt: a lost writers' lock stops the run where it is, and says
// where the replacement stands: before the removal nothing was changed
// but the evidence (the record is ended, exit 1); after it, what was
// removed, added back or promoted, the record it is taken up from, and
// the command that takes it up (ErrStoppedMidway: exit 3).
func TestLostAt(t *testing.T) {
	const again = "regghost members replace m1 --confirm --backup-dir /srv/evidence"
	for _, tt := range []struct {
		step    replaceStep
		midway  bool
		stage   ReplaceStage
		says    []string
		recStep string
	}{
		{stepEvidence, false, "", []string{"before the removal", "nothing was changed but the evidence in", "run `" + again + "` to start again"}, recordAbandoned},
		{stepRemove, false, "", []string{"before the removal", "nothing was changed but the evidence"}, recordAbandoned},
		{stepAdd, true, "", []string{"m1 (a1) is removed from etcd cluster c0 and not added back yet", "one voting member fewer", "run `" + again + "` to take it up: it adds it back"}, ""},
		{stepNode, true, StageWaiting, []string{"added back as learner b1, not promoted", "once its etcd runs on its node as said"}, ""},
		{stepPromote, true, StageWaiting, []string{"m1 (a1) is removed from etcd cluster c0 and added back as learner b1, not promoted", "records the replacement",
			"run `" + again + "` to take it up once its etcd runs on its node as said: it promotes b1"}, ""},
		{stepCompare, true, "", []string{"m1 was promoted (now b1)", "CORRUPT was not disarmed", "it compares them and disarms CORRUPT"}, ""},
		{stepDisarm, true, "", []string{"m1 was promoted (now b1)"}, ""},
	} {
		t.Run(string(tt.step), func(t *testing.T) {
			dir := t.TempDir()
			r := &replaceRun{o: ReplaceOptions{Member: "m1", Again: again, Now: time.Now}, cluster: "c0"}
			p := &replacePlan{res: &Replacement{Member: "m1", ID: "a1", LearnerID: "b1"}, dir: dir, rec: &replaceRecord{Others: []string{"http://10.0.0.1:2379"}}}
			err := r.lostAt(p, tt.step)
			if !errors.Is(err, ErrLockLost) || errors.Is(err, ErrStoppedMidway) != tt.midway || errors.Is(err, ErrLearnerWaiting) {
				t.Fatalf("lostAt: %v; want the lock lost, midway %v", err, tt.midway)
			}
			if p.res.Stage != tt.stage {
				t.Errorf("stage %q, want %q", p.res.Stage, tt.stage)
			}
			for _, want := range append(tt.says, "its lease expired") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q misses %q", err, want)
				}
			}
			if tt.midway && !strings.Contains(err.Error(), filepath.Join(dir, recordFile)) {
				t.Errorf("%q does not name the record", err)
			}
			rec, rerr := readRecord(filepath.Join(dir, recordFile))
			switch {
			case tt.recStep == "" && rerr == nil:
				t.Errorf("the record was written (%+v): a replacement under way keeps its record as it is", rec)
			case tt.recStep != "" && (rerr != nil || rec.Stage != tt.recStep):
				t.Errorf("record: %+v, %v; want stage %q", rec, rerr, tt.recStep)
			}
		})
	}
}

// TestPause: a wait ends when its time is up, at once when the lock is
// lost (ErrLockLost), and as a stop when the run was stopped, even when
// the stop ended the lock's lease too.
func TestPause(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		lost <-chan struct{}
		d    time.Duration
		want error
	}{
		{"the time is up", context.Background(), make(chan struct{}), time.Millisecond, nil},
		{"no lock that can be lost", context.Background(), nil, time.Millisecond, nil},
		{"the lock is lost", context.Background(), closed, time.Hour, ErrLockLost},
		{"stopped, and the lease with it", stopped, closed, time.Hour, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &replaceRun{lost: tt.lost}
			if err := r.pause(tt.ctx, tt.d); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("pause: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestReplaceStopsWhenTheLockIsLostInTheWait: the writers' lock's lease
// is revoked while Replace waits for the learner (as when etcd is
// unreachable, or regghost paused, for over the lease's TTL). The wait
// ends then, by the lost lock, not by its end (the clock never moves:
// --wait never ends it) nor by a stop: nothing is promoted without the
// lock; the error says the member was removed and added back, not
// promoted, the record and the command to take it up; and the next run
// takes it up from that record.
func TestReplaceStopsWhenTheLockIsLostInTheWait(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	w := c.follower(t)
	name := c.names[w]
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-3"))
	root := t.TempDir()
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	// The member replaced stops as it applies its own removal: the test
	// reads the cluster through another.
	cli := c.Clients[(w+1)%len(c.names)]

	frozen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// guard ends the run if nothing else does: without a stop on the lost
	// lock, the wait would end by it (a stop), never by the lost lock.
	guard, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	const again = "regghost members replace NAME --confirm --backup-dir DIR"
	o := ReplaceOptions{Compare: c.options(), Member: name, EvidenceRoot: root, Confirm: true, Wait: time.Hour, Poll: 100 * time.Millisecond,
		Now: func() time.Time { return frozen }, Again: again}
	type result struct {
		res *Replacement
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Replace(guard, o)
		done <- result{res, err}
	}()

	// Once the learner is added back (the wait has begun: the member's
	// etcd is not started again, so it cannot catch up), the lock's lease
	// is revoked.
	var learner uint64
	for learner == 0 {
		select {
		case r := <-done:
			t.Fatalf("Replace ended before the wait: %v (%+v)", r.err, r.res)
		case <-time.After(100 * time.Millisecond):
		}
		list, err := cli.MemberList(ctx)
		if err != nil {
			continue
		}
		for _, m := range list.Members {
			if m.IsLearner {
				learner = m.ID
			}
		}
	}
	// Its etcd is stopped on its node (it stopped as it applied its own
	// removal), and not started again.
	c.Stop(w)
	held, err := cli.Get(ctx, etcdwrite.LockPrefix, clientv3.WithPrefix())
	if err != nil || len(held.Kvs) == 0 || held.Kvs[0].Lease == 0 {
		t.Fatalf("the lock's lease: %v, %v", held, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(held.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}

	r := <-done
	if guard.Err() != nil {
		t.Fatalf("the wait ended by the guard, not by the lost lock: %v", r.err)
	}
	if !errors.Is(r.err, ErrLockLost) || !errors.Is(r.err, ErrStoppedMidway) || errors.Is(r.err, ErrLearnerWaiting) || r.res == nil || r.res.Stage != StageWaiting {
		t.Fatalf("Replace: %v (%+v), want it stopped by the lost lock", r.err, r.res)
	}
	id := hexID(learner)
	for _, want := range []string{"is removed from etcd cluster", "added back as learner " + id + ", not promoted",
		filepath.Join(r.res.Dir, recordFile), "run `" + again + "` to take it up"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("%q misses %q", r.err, want)
		}
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.ID == learner && !m.IsLearner {
			t.Errorf("%s was promoted without the lock", name)
		}
	}
	rec, err := readRecord(filepath.Join(r.res.Dir, recordFile))
	if err != nil || rec.Stage != recordRemoving || rec.LearnerID != id {
		t.Fatalf("the record: %+v, %v; want the replacement under way, learner %s", rec, err, id)
	}
	// The next run takes it up from there.
	o.Confirm = false
	plan, err := Replace(ctx, o)
	if err != nil || plan.Stage != StagePlanned || !strings.Contains(strings.Join(plan.Steps, "\n"), "take up the replacement") {
		t.Errorf("the next run: %v (%+v)", err, plan)
	}
}
