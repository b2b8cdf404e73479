package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/regghost/regghost/pkg/members"
)

// TestMembersDisagreeAndTheWayBack: three real etcd members under a real
// kube-apiserver. One member's db file is changed while it is stopped (a
// ConfigMap dropped, another's value changed, one added: written with
// bbolt, as etcd#13766's operators read them) and it is started again;
// etcd's corruption check is off, as by default. `members` names exactly
// those keys and that member; `members replace` brings it back to zero
// differences with the others' data intact and nothing lost: the member as
// a follower, then as the leader (the leadership moves first). With two
// members wrong it refuses, and changes nothing.
func TestMembersDisagreeAndTheWayBack(t *testing.T) {
	c := startCluster(t, clusterOptions{members: 3})
	// The members' processes belong to the whole test: no subtest's
	// cleanup stops one it started again.
	whole := t
	c.createNamespace(t, "shop")
	for _, n := range []string{"a", "b", "c", "d"} {
		c.createConfigMap(t, "shop", n)
	}
	const (
		a     = "/registry/configmaps/shop/a"
		b     = "/registry/configmaps/shop/b"
		d     = "/registry/configmaps/shop/d"
		ghost = "/registry/configmaps/shop/ghost"
	)
	other := c.value(t, "/registry/configmaps/shop/c")
	corrupt := func(t *testing.T, m *member, edits ...func(*testing.T, *bbolt.Bucket)) {
		t.Helper()
		m.shutdown(t)
		editMemberDB(t, filepath.Join(c.dir, m.name+"-data", "member", "snap", "db"), edits...)
		m.restart(whole, c)
	}
	compare := func(t *testing.T) (*members.Report, int) {
		t.Helper()
		out, errOut, code := c.regghost(t, "", "members", "--interval", "1s", "-o", "json")
		var rep members.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("members -o json: exit %d: %v\n%s\n%s", code, err, out, errOut)
		}
		return &rep, code
	}
	differing := func(rep *members.Report) []string {
		var out []string
		for _, k := range rep.Keys.Keys {
			for _, s := range k.States {
				if s.Difference != "" {
					out = append(out, s.Member+" "+k.Key+" "+s.Difference)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	// through reads etcd through the members given (those of the
	// majority): a linearizable read a wrong member answers is its own data.
	through := func(t *testing.T, via ...*member) *cluster {
		t.Helper()
		var eps []string
		for _, m := range via {
			eps = append(eps, m.url)
		}
		view := *c
		view.etcd = c.etcdClient(t, eps...)
		return &view
	}
	// onNode is the cluster as seen from m's own node: regghost is given
	// m's endpoint alone (kubeadm's manifest names only the local
	// member); the test reads etcd through the others.
	onNode := func(t *testing.T, m *member) *cluster {
		t.Helper()
		var others []*member
		for _, o := range c.members {
			if o != m {
				others = append(others, o)
			}
		}
		view := through(t, others...)
		view.etcdURL = m.url
		return view
	}
	// nodeSteps does what the printed steps say on the member's node:
	// etcd stopped, its data directory moved aside and kept, started
	// again empty, joining the cluster as it is now.
	nodeSteps := func(t *testing.T, m *member) string {
		t.Helper()
		m.stop(t)
		data := filepath.Join(c.dir, m.name+"-data")
		aside := data + ".wrong"
		mustNoErr(t, "move the data directory aside", os.Rename(data, aside))
		m.restart(whole, c)
		return aside
	}
	// replace runs the way back from the wrong member's own node, with
	// its endpoint alone: the first run removes it and adds it back as a
	// learner, the second (the member then a learner, the only endpoint
	// given) promotes it and compares.
	replace := func(t *testing.T, wrong *member, wasLeader bool) {
		t.Helper()
		root := filepath.Join(shortTempDir(t), "evidence")
		c := onNode(t, wrong)
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "members", "replace", wrong.name, "--backup-dir", root)
		if !wasLeader { // the guide captures the follower's replacement
			checkCapture(t, "replace-dry-run", code, out, errOut)
		}
		if code != 0 || !strings.Contains(out, "Dry run: nothing was changed") || wasLeader != strings.Contains(out, "leadership: move it from "+wrong.name) ||
			!strings.Contains(out, "survives no further failure") {
			t.Fatalf("members replace (dry run): exit %d:\n%s\n%s", code, out, errOut)
		}
		c.assertUnchanged(t, "the dry run of members replace", before)
		out, errOut, code = c.regghost(t, "", "members", "replace", wrong.name, "--backup-dir", root, "--confirm", "--yes", "--wait", "1s")
		if !wasLeader { // the guide captures the follower's replacement
			checkCapture(t, "replace-confirm", code, errOut, out)
		}
		if code != 3 || !strings.Contains(out, "--initial-cluster-state=existing") || !strings.Contains(out, "added back as a learner") {
			t.Fatalf("members replace --confirm: exit %d, want it waiting for the learner:\n%s\n%s", code, out, errOut)
		}
		aside := nodeSteps(t, wrong)
		out, errOut, code = c.regghost(t, "", "members", "replace", wrong.name, "--backup-dir", root, "--confirm", "--yes", "--wait", "3m")
		if !wasLeader { // the guide captures the follower's replacement
			checkCapture(t, "replace-again", code, errOut, out)
		}
		if code != 0 || !strings.Contains(out, "every member agrees") || !strings.Contains(errOut, "reaching the cluster through the client URLs") {
			t.Fatalf("members replace --confirm once it runs: exit %d:\n%s\n%s", code, out, errOut)
		}
		if rep, code := compare(t); code != 0 || !rep.Verdict.Agree {
			t.Errorf("members after the replacement: exit %d, %+v", code, rep.Verdict)
		}
		// The majority's data, whole: nothing written, nothing lost.
		c.assertUnchanged(t, "members replace", before)
		dbs, _ := filepath.Glob(filepath.Join(root, "*-members-replace-"+wrong.name, "*.db"))
		if len(dbs) != 3 {
			t.Errorf("evidence: %v, want every member's snapshot", dbs)
		}
		if _, err := os.Stat(filepath.Join(aside, "member", "snap", "db")); err != nil {
			t.Errorf("the wrong member's data directory is gone: %v", err)
		}
		mustNoErr(t, "move the evidence directory away", os.RemoveAll(aside))
	}

	// The wrong follower is m1 and the leader m2, as the guide captured
	// from this test says.
	w := c.members[1]
	if l := c.leader(t); l != c.members[2] {
		c.moveLeader(t, l, c.members[2])
	}
	t.Run("a follower is wrong", func(t *testing.T) {
		corrupt(t, w, dropRevisions(a), setLatestValue(b, other), addRecord(ghost, other))
		rep, code := compare(t)
		out, errOut, shown := c.regghost(t, "", "members", "--interval", "1s")
		checkCapture(t, "members", shown, out, errOut)
		want := []string{w.name + " " + a + " missing", w.name + " " + b + " value", w.name + " " + ghost + " extra"}
		slices.Sort(want)
		if code != 3 || strings.Join(rep.Verdict.Wrong, ",") != w.name || strings.Join(differing(rep), "\n") != strings.Join(want, "\n") {
			t.Fatalf("members: exit %d, wrong %v (%s), differing:\n%s\nwant:\n%s", code, rep.Verdict.Wrong, rep.Verdict.Reason,
				strings.Join(differing(rep), "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("serve's alert names the wrong member", func(t *testing.T) {
		dir := t.TempDir()
		srv := c.startServe(t, dir, "--interval", "1h", "--members-interval", "2s")
		p := scrapeWithRules(t, dir, srv)
		waitFor(t, 90*time.Second, "RegghostEtcdMembersDisagree naming "+w.name, func() error {
			return firing(p, "RegghostEtcdMembersDisagree", "member", w.name)
		})
		if v, ok := srv.metric(t, `regghost_etcd_member_differing_keys{member="`+w.name+`"}`); !ok || v != 3 {
			t.Errorf("differing keys of %s: %v (present %v), want 3", w.name, v, ok)
		}
	})

	t.Run("replace brings it back", func(t *testing.T) { replace(t, w, false) })

	t.Run("a member behind is not wrong", func(t *testing.T) { behindIsNotWrong(t, c, compare) })

	t.Run("the leader is wrong", func(t *testing.T) {
		w := c.members[2]
		corrupt(t, w, dropRevisions(d))
		if l := c.leader(t); l != w {
			c.moveLeader(t, l, w)
		}
		rep, code := compare(t)
		if code != 3 || strings.Join(rep.Verdict.Wrong, ",") != w.name || strings.Join(differing(rep), "\n") != w.name+" "+d+" missing" {
			t.Fatalf("members: exit %d, wrong %v, differing %v", code, rep.Verdict.Wrong, differing(rep))
		}
		replace(t, w, true)
		if c.leader(t) == w {
			t.Error("the replaced member leads")
		}
	})

	t.Run("a member that is down is replaced", func(t *testing.T) {
		down := c.members[0]
		if c.leader(t) == down {
			down = c.members[1]
		}
		down.shutdown(t)
		rep, code := compare(t)
		if code != 1 || len(rep.Verdict.Wrong) != 0 || !slices.Equal(rep.Verdict.NotCompared, []string{down.name}) || !rep.Verdict.Agree {
			t.Fatalf("members with %s down: exit %d, verdict %+v", down.name, code, rep.Verdict)
		}
		root := filepath.Join(t.TempDir(), "evidence")
		c := through(t, c.members...)
		before := c.state(t)
		// Each call to the member that is down waits out twice
		// --dial-timeout: 2s keeps the test short, as an operator may
		// (members, above, read it at the default).
		out, errOut, code := c.regghost(t, "", "members", "replace", down.name, "--backup-dir", root, "--confirm", "--yes", "--wait", "1s", "--dial-timeout", "2s")
		t.Logf("$ regghost members replace %s --confirm --yes --wait 1s\n%s%s", down.name, errOut, out)
		if code != 3 || !strings.Contains(out, down.name+" does not answer") || !strings.Contains(out, "added back as a learner") {
			t.Fatalf("members replace of a member that is down: exit %d:\n%s\n%s", code, out, errOut)
		}
		if dbs, _ := filepath.Glob(filepath.Join(root, "*-members-replace-"+down.name, "*.db")); len(dbs) != 2 {
			t.Errorf("evidence: %v, want the snapshots of the two members that answer", dbs)
		}
		nodeSteps(t, down)
		out, errOut, code = c.regghost(t, "", "members", "replace", down.name, "--backup-dir", root, "--confirm", "--yes", "--wait", "3m", "--dial-timeout", "2s")
		if code != 0 || !strings.Contains(out, "every member agrees") {
			t.Fatalf("members replace once it runs: exit %d:\n%s\n%s", code, out, errOut)
		}
		c.assertUnchanged(t, "members replace of a member that is down", before)
	})

	t.Run("k3s's keys: refused", func(t *testing.T) {
		corrupt(t, c.members[0], dropRevisions(a))
		ctx := context.Background()
		for _, k := range []string{"k3s/apiaddresses", "k3s/etcd/learnerProgress", "/bootstrap/2f5d3a6e1c0b"} {
			_, err := c.etcd.Put(ctx, k, "x")
			mustNoErr(t, "put "+k, err)
		}
		// Read through the majority: a linearizable read a wrong member
		// answers is its own data.
		c := through(t, c.members[1], c.members[2])
		before := c.state(t)
		root := filepath.Join(t.TempDir(), "evidence")
		out, errOut, code := c.regghost(t, "", "members", "replace", c.members[0].name, "--backup-dir", root, "--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, "this is k3s") || !strings.Contains(errOut, "kubectl delete node") {
			t.Errorf("members replace on k3s's keyspace: exit %d:\n%s\n%s", code, out, errOut)
		}
		if rep, code := compare(t); code != 3 || strings.Join(rep.Verdict.Wrong, ",") != c.members[0].name {
			t.Errorf("members on k3s's keyspace: exit %d, wrong %v: it still compares and names", code, rep.Verdict.Wrong)
		}
		c.assertUnchanged(t, "a refused members replace on k3s", before)
		for _, k := range []string{"k3s/apiaddresses", "k3s/etcd/learnerProgress", "/bootstrap/2f5d3a6e1c0b"} {
			_, err := c.etcd.Delete(ctx, k)
			mustNoErr(t, "delete "+k, err)
		}
	})

	t.Run("two members wrong of three: refused", func(t *testing.T) {
		// members[0] is wrong since the subtest before.
		corrupt(t, c.members[1], setLatestValue(d, other))
		rep, code := compare(t)
		if code != 3 || len(rep.Verdict.Wrong) != 0 || rep.Verdict.Refused == "" {
			t.Fatalf("members: exit %d, verdict %+v, want no member named", code, rep.Verdict)
		}
		root := filepath.Join(t.TempDir(), "evidence")
		c := through(t, c.members[2])
		before := c.state(t)
		for _, m := range c.members {
			out, errOut, code := c.regghost(t, "", "members", "replace", m.name, "--backup-dir", root, "--confirm", "--yes")
			if code != 1 || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "nothing was changed") {
				t.Errorf("members replace %s: exit %d, want refused:\n%s\n%s", m.name, code, out, errOut)
			}
		}
		c.assertUnchanged(t, "a refused members replace", before)
		if _, err := os.Stat(root); err == nil {
			t.Error("a refused replacement wrote evidence")
		}
	})
}

// editMemberDB changes a stopped member's db file, key bucket, with edits.
func editMemberDB(t *testing.T, path string, edits ...func(*testing.T, *bbolt.Bucket)) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("open %s: %v (held by: %s)", path, err, holdersOf(path))
	}
	// An edit that fails the test (t.Fatal inside Update) still closes
	// the file: a later subtest opens it again.
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return errString("no key bucket")
		}
		for _, e := range edits {
			e(t, b)
		}
		return nil
	})
	mustNoErr(t, "edit "+path, err)
}

// revisionsOf are the key bucket's records of key, oldest first.
func revisionsOf(t *testing.T, b *bbolt.Bucket, key string) (revs [][]byte, kvs []*mvccpb.KeyValue) {
	t.Helper()
	mustNoErr(t, "walk the key bucket", b.ForEach(func(k, v []byte) error {
		kv := &mvccpb.KeyValue{}
		if err := proto.Unmarshal(v, kv); err != nil {
			return err
		}
		if string(kv.Key) == key {
			revs, kvs = append(revs, append([]byte{}, k...)), append(kvs, kv)
		}
		return nil
	}))
	if len(revs) == 0 {
		t.Fatalf("no revision of %s in the db", key)
	}
	return revs, kvs
}

// dropRevisions deletes every revision of key: the member never held it.
func dropRevisions(key string) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		revs, _ := revisionsOf(t, b, key)
		for _, r := range revs {
			mustNoErr(t, "delete a revision", b.Delete(r))
		}
	}
}

// setLatestValue changes the value of key's latest revision.
func setLatestValue(key string, value []byte) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		revs, kvs := revisionsOf(t, b, key)
		kv := kvs[len(kvs)-1]
		kv.Value = value
		raw, err := proto.Marshal(kv)
		mustNoErr(t, "marshal", err)
		mustNoErr(t, "put", b.Put(revs[len(revs)-1], raw))
	}
}

// addRecord adds a key the other members do not hold, at the member's
// latest revision (a second change of it: its revision does not move).
func addRecord(key string, value []byte) func(*testing.T, *bbolt.Bucket) {
	return func(t *testing.T, b *bbolt.Bucket) {
		last, _ := b.Cursor().Last()
		main := int64(binary.BigEndian.Uint64(last[:8]))
		raw, err := proto.Marshal(&mvccpb.KeyValue{Key: []byte(key), Value: value, CreateRevision: main, ModRevision: main, Version: 1})
		mustNoErr(t, "marshal", err)
		rev := make([]byte, 17)
		binary.BigEndian.PutUint64(rev, uint64(main))
		rev[8] = '_'
		binary.BigEndian.PutUint64(rev[9:], 99)
		mustNoErr(t, "put", b.Put(rev, raw))
	}
}

// holdersOf names the processes that have path open (from /proc), for a
// failure message.
func holdersOf(path string) string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	if len(out) == 0 {
		return "no process"
	}
	return strings.Join(out, "; ")
}
