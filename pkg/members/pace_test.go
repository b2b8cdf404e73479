package members

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/pace"
)

// TestComparePacedByLatency: each member's keyspace read is paced by its
// own latency (pkg/pace): the pacer measured the member's probe idle
// before the read, and the progress says so for every member.
func TestComparePacedByLatency(t *testing.T) {
	c := startCluster(t, 3)
	for i := 0; i < 30; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	o := c.options()
	o.Keys = KeysAlways
	var mu sync.Mutex
	var steps []string
	o.Notices = func(n notice.Notice) {
		s := n.Text
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, s)
	}
	rep, err := Compare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verdict.Agree || rep.Keys.Mode != ModeRevision {
		t.Fatalf("verdict %+v, keys %q", rep.Verdict, rep.Keys.Mode)
	}
	all := strings.Join(steps, "\n")
	for _, name := range c.names {
		re := regexp.MustCompile(`(?m)^` + name + `: \d+ keys read in \S+; its probe answered in [0-9.]+[µm]?s idle, `)
		if !re.MatchString(all) {
			t.Errorf("no pace said for %s:\n%s", name, all)
		}
	}
}

// TestProbeWithoutQuorum: the probe is a serializable read, which a member
// that lost its quorum still answers, as it still serves the read being
// paced.
func TestProbeWithoutQuorum(t *testing.T) {
	c := startCluster(t, 3)
	etcdtest.Put(t, c.cli, "/registry/configmaps/default/a", configMap(t, "a", "v1"))
	lone := c.follower(t)
	for i := range c.names {
		if i != lone {
			c.stop(i)
		}
	}
	o := c.options()
	cli, err := o.dial(c.eps[lone])
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := (conn{ep: c.eps[lone], cli: cli}).probe(ctx); err != nil {
		t.Errorf("%s without its quorum: %v", c.names[lone], err)
	}
}

// TestPacedSaid: what the progress says of a member's pace, and what a
// command that ran out of time says of the members its pacer slowed down.
func TestPacedSaid(t *testing.T) {
	us := time.Microsecond
	steady := pace.Stats{Idle: 312 * us, Pace: 2500, Lowest: 2500, Highest: 2500}
	moved := pace.Stats{Idle: 312 * us, Worst: 4118 * us, Pace: 3000, Lowest: 1000, Highest: 9000, Raised: 20, BackedOff: 3}
	for _, tc := range []struct {
		s    pace.Stats
		want string
	}{
		// One shape whatever the pacer did: a guide quotes it.
		{steady, "m0: 30 keys read in 40ms; its probe answered in 0.31ms idle, 0.31ms at worst; paced between 2500 and 2500 keys a second, backed off 0 times"},
		{moved, "m0: 30 keys read in 40ms; its probe answered in 0.31ms idle, 4.12ms at worst; paced between 1000 and 9000 keys a second, backed off 3 times"},
	} {
		if got := paced("m0", 30, 41*time.Millisecond, tc.s); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	curs := []*cursor{{keys: 1200}, {keys: 5000}, {keys: 7}}
	got := slowedDown([]string{"m0", "m1", "m2"}, curs, []*pace.Stats{&moved, &steady, nil})
	if want := "m0 answered its probe in 4.12ms at worst against 310µs idle, and was read down to 1000 keys a second, 1200 keys in"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := slowedDown([]string{"m0"}, curs[:1], []*pace.Stats{&steady}); got != "" {
		t.Errorf("a pace never backed off: %q", got)
	}
}
