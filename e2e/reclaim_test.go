package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/reclaim"
)

// fillUntilNoSpace puts 1 MiB values under prefix until etcd refuses one
// for lack of space, and returns how many it took.
func fillUntilNoSpace(t *testing.T, cli *clientv3.Client, prefix string) int {
	t.Helper()
	v := strings.Repeat("x", 1<<20)
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("%s%03d", prefix, i), v)
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return i
		}
		mustNoErr(t, "put", err)
	}
	t.Fatal("etcd never ran out of space")
	return 0
}

// alarms lists the cluster's alarms by type.
func alarms(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.AlarmList(ctx)
	mustNoErr(t, "alarm list", err)
	var out []string
	for _, a := range resp.Alarms {
		out = append(out, a.Alarm.String())
	}
	return out
}

func decodeReclaim(t *testing.T, out string) *reclaim.Result {
	t.Helper()
	var res reclaim.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode reclaim -o json: %v\n%s", err, out)
	}
	return &res
}

// TestReclaimBringsWritesBack: a real etcd with a 16 MiB quota is filled
// until NOSPACE; what filled it is deleted (etcd serves deletes under the
// alarm), and space reclaim --confirm brings writes back: the alarm is gone,
// a put succeeds, and the snapshot taken first verifies and still holds
// the deleted revisions. The member's data directory and name come from a
// kubeadm etcd manifest under --node-root, so its disk is checked. etcd 3.5
// says its quota on /metrics only (3.6 in its Status too).
func TestReclaimBringsWritesBack(t *testing.T) {
	parallel(t)
	for _, r := range []struct{ name, bin, quotaFrom string }{{"3.7", bins.etcd, "Status"}, {"3.5", bins.etcd35, "/metrics"}} {
		t.Run("etcd "+r.name, func(t *testing.T) { reclaimBringsWritesBack(t, r.bin, r.quotaFrom) })
	}
}

func reclaimBringsWritesBack(t *testing.T, etcdBin, quotaFrom string) {
	c := startCluster(t, clusterOptions{noAPIServer: true, etcdQuota: 16 << 20, etcdBin: etcdBin})
	n := fillUntilNoSpace(t, c.etcd, "/big/")
	if got := alarms(t, c.etcd); strings.Join(got, ",") != "NOSPACE" {
		t.Fatalf("alarms after %d puts: %v, want NOSPACE", n, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := c.etcd.Delete(ctx, "/big/", clientv3.WithPrefix())
	cancel()
	mustNoErr(t, "delete under NOSPACE", err)

	node := t.TempDir()
	manifest := filepath.Join(node, "etc/kubernetes/manifests/etcd.yaml")
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Dir(manifest), 0o755))
	mustNoErr(t, "write manifest", os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  containers:
  - name: etcd
    command: [etcd, --name=e2e, --data-dir=/var/lib/etcd, --quota-backend-bytes=16777216]
    volumeMounts: [{name: etcd-data, mountPath: /var/lib/etcd}]
  volumes:
  - {name: etcd-data, hostPath: {path: /etcd-data}}
`), 0o600))
	// The manifest's /etcd-data is the etcd's data directory on this "node".
	mustNoErr(t, "link", os.Symlink(filepath.Join(c.dir, "etcd-data"), filepath.Join(node, "etcd-data")))
	root := filepath.Join(t.TempDir(), "backups")
	args := []string{"space", "reclaim", "--backup-dir", root, "--node-root", node}

	out, errOut, code := c.regghost(t, "", args...)
	if code != 0 || !strings.Contains(out, "alarm NOSPACE raised by e2e") || !strings.Contains(out, "Dry run: nothing was changed") ||
		!regexp.MustCompile(`e2e\s+leader\s+yes\s+[\d.]+ MiB\s+[\d.]+ MiB\s+16\.0 MiB\s+fits: `).MatchString(out) ||
		!strings.Contains(out, "Quotas from the member's "+quotaFrom+": e2e.") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(root); err == nil {
		t.Fatal("the dry run wrote to the backup directory")
	}
	if got := alarms(t, c.etcd); len(got) != 1 {
		t.Fatalf("the dry run changed the alarms: %v", got)
	}

	// On a terminal, what this node's lock does not cover is said before
	// the question, not after the answer; "no" changes nothing.
	run := onTerminalInteractive(t, append(append(append([]string{}, args...), "--confirm", "--no-api"), c.etcdArgs()...)...)
	asked := strings.Join(strings.Fields(run.question(t)), " ")
	if !strings.Contains(asked, "not one on another node") || !strings.Contains(asked, "only this node's lock") {
		t.Errorf("the question comes without the warning that this node's lock does not stop another node:\n%s", asked)
	}
	run.answer(t, "no")
	if rest, code := run.wait(t); code != 1 || !strings.Contains(rest, "nothing was changed") {
		t.Errorf("answered no: exit %d:\n%s", code, rest)
	}
	if _, err := os.Stat(root); err == nil {
		t.Error("a reclaim answered no wrote to the backup directory")
	}
	if got := alarms(t, c.etcd); len(got) != 1 {
		t.Fatalf("a reclaim answered no changed the alarms: %v", got)
	}

	out, errOut, code = c.regghost(t, "", append(args, "--confirm", "--yes", "-o", "json")...)
	if code != 0 {
		t.Fatalf("reclaim --confirm: exit %d: %s\n%s", code, errOut, out)
	}
	res := decodeReclaim(t, out)
	if len(res.Members) != 1 || res.Members[0].Outcome != reclaim.Defragmented || res.Members[0].After >= 16<<20 || res.Members[0].After >= res.Members[0].Before {
		t.Errorf("members: %+v", res.Members)
	}
	if d := res.Plan.Members[0].Disk; !d.Checked || d.From != "kubeadm static pod /etc/kubernetes/manifests/etcd.yaml" {
		t.Errorf("disk: %+v, want checked through the node's manifest", d)
	}
	if res.Disarm == nil || !res.Disarm.Disarmed {
		t.Errorf("disarm: %+v", res.Disarm)
	}
	for _, want := range []string{"regghost: warning: etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock",
		"Snapshot from " + c.etcdURL + " saved at", filepath.Base(res.Dir), "Compacted at revision", "Defragmenting e2e (leader", "Defragmented e2e: "} {
		if !strings.Contains(oneLine(errOut), want) {
			t.Errorf("progress on stderr misses %q:\n%s", want, errOut)
		}
	}
	if got := alarms(t, c.etcd); len(got) != 0 {
		t.Errorf("alarms after reclaim: %v", got)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	_, err = c.etcd.Put(ctx, "/registry/configmaps/default/after-reclaim", "written")
	cancel()
	mustNoErr(t, "put after reclaim", err)

	snap := filepath.Join(res.Dir, "snapshot.db")
	if out, errOut, code := runBinary(t, "", "snapshot", "status", snap); code != 0 || !strings.Contains(out, "(verified)") {
		t.Errorf("snapshot status: exit %d: %s%s", code, out, errOut)
	}
	// The snapshot still holds what the compaction ended in etcd.
	if out, errOut, code := runBinary(t, "", "history", "/big/000", "--db", snap, "--no-api", "-o", "json"); code != 0 || !strings.Contains(out, `"/big/000"`) {
		t.Errorf("history --db of the snapshot: exit %d: %s%s", code, out, errOut)
	}
	if out, _, code := runBinary(t, "", "backup", "ls", "--backup-dir", root); code != 0 || !strings.Contains(out, res.Dir) || !strings.Contains(out, " ok") {
		t.Errorf("backup ls: exit %d:\n%s", code, out)
	}
}

// TestReclaimThreeMembers: on a 3-member etcd, reclaim defragments the two
// followers, then the leader last; with a member stopped it refuses to
// start and changes nothing.
func TestReclaimThreeMembers(t *testing.T) {
	c := startCluster(t, clusterOptions{members: 3, noAPIServer: true})
	v := strings.Repeat("x", 1<<20)
	for i := 0; i < 4; i++ {
		c.put(t, fmt.Sprintf("/big/%d", i), []byte(v))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := c.etcd.Delete(ctx, "/big/", clientv3.WithPrefix())
	cancel()
	mustNoErr(t, "delete", err)
	root := filepath.Join(t.TempDir(), "backups")

	t.Run("the leader last", func(t *testing.T) {
		leader := c.leader(t)
		// Every member's data directory is on this host: each disk is
		// checked before its member's turn.
		args := []string{"space", "reclaim", "--backup-dir", root, "--confirm", "--yes"}
		for _, m := range c.members {
			args = append(args, "--data-dir", m.name+"="+filepath.Join(c.dir, m.name+"-data"))
		}
		out, errOut, code := c.regghost(t, "", args...)
		t.Logf("regghost space reclaim --confirm --yes:\n%s", out)
		if code != 0 {
			t.Fatalf("reclaim: exit %d: %s\n%s", code, errOut, out)
		}
		var order []string
		for _, m := range regexp.MustCompile(`(?m)^Defragmenting (m\d) \((\w+),`).FindAllStringSubmatch(out, -1) {
			order = append(order, m[1]+" "+m[2])
		}
		if len(order) != 3 || order[2] != leader.name+" leader" || strings.Contains(order[0]+order[1], "leader") {
			t.Errorf("defragmented %v, want both followers, then the leader %s last", order, leader.name)
		}
		for _, want := range []string{"No NOSPACE alarm is raised: nothing to disarm.", "defragmented in", "fits: "} {
			if !strings.Contains(out, want) {
				t.Errorf("output misses %q", want)
			}
		}

		out, errOut, code = c.regghost(t, "", "space", "reclaim", "--backup-dir", root, "--confirm", "--yes", "-o", "json")
		if code != 0 {
			t.Fatalf("reclaim -o json: exit %d: %s", code, errOut)
		}
		res := decodeReclaim(t, out)
		if len(res.Members) != 3 {
			t.Fatalf("members: %+v", res.Members)
		}
		for i, m := range res.Members {
			if m.Outcome != reclaim.Defragmented || m.Leader != (i == 2) {
				t.Errorf("member %d: %s leader=%v %s, want the leader last and only last", i, m.Name, m.Leader, m.Outcome)
			}
		}
	})

	t.Run("the leader moves while the question waits", func(t *testing.T) {
		// The plan is made with one leader; leadership moves to a member
		// the plan called a follower before the answer. The leader is
		// read again before each defragmentation: the new one goes last.
		was := c.leader(t)
		args := append([]string{"space", "reclaim", "--backup-dir", root, "--confirm", "--no-api"}, c.etcdArgs()...)
		run := onTerminalInteractive(t, args...)
		plan := run.question(t)
		if !regexp.MustCompile(was.name + `\s+leader\s`).MatchString(plan) {
			t.Fatalf("the plan does not show %s leading:\n%s", was.name, plan)
		}
		to := c.members[0]
		if to == was {
			to = c.members[1]
		}
		c.moveLeader(t, was, to)
		run.answer(t, "yes")
		out, code := run.wait(t)
		if code != 0 {
			t.Fatalf("reclaim: exit %d:\n%s", code, out)
		}
		var order []string
		for _, m := range regexp.MustCompile(`(?m)Defragmenting (m\d) \((\w+),`).FindAllStringSubmatch(out, -1) {
			order = append(order, m[1]+" "+m[2])
		}
		if len(order) != 3 || order[2] != to.name+" leader" || strings.Contains(order[0]+order[1], "leader") {
			t.Errorf("defragmented %v, want the new leader %s last (the plan's leader was %s):\n%s", order, to.name, was.name, out)
		}
	})

	t.Run("refused with a member down", func(t *testing.T) {
		down := c.members[0]
		if c.leader(t) == down {
			down = c.members[1]
		}
		down.stop(t)
		before := alarms(t, c.etcd)
		root := filepath.Join(t.TempDir(), "backups")
		// A member down costs the dial timeout (connect) and twice that
		// (its health check).
		out, errOut, code := c.regghost(t, "", "space", "reclaim", "--backup-dir", root, "--dial-timeout", "1s")
		t.Logf("regghost space reclaim with %s down:\n%s", down.name, out)
		if code != 0 || !regexp.MustCompile(down.name+`\s+follower\s+NO\s`).MatchString(out) || !strings.Contains(out, "Would be refused") {
			t.Errorf("dry run with %s down: exit %d\n%s%s", down.name, code, out, errOut)
		}
		out, errOut, code = c.regghost(t, "", "space", "reclaim", "--backup-dir", root, "--dial-timeout", "1s", "--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, "refused: member "+down.name+" ("+down.url+") is not healthy") || !strings.Contains(errOut, "nothing was changed") {
			t.Errorf("reclaim with %s down: exit %d\nstdout:\n%s\nstderr:\n%s", down.name, code, out, errOut)
		}
		if _, err := os.Stat(root); err == nil {
			t.Error("a refused reclaim wrote to the backup directory")
		}
		if after := alarms(t, c.etcd); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("alarms changed: %v -> %v", before, after)
		}
	})
}

// TestReclaimKine: kine has none of etcd's compaction, defragmentation and
// alarm RPCs: reclaim says what to do there instead and refuses to act.
func TestReclaimKine(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{kine: true, noAPIServer: true})
	out, errOut, code := c.regghost(t, "", "space", "reclaim")
	if code != 0 || !strings.Contains(out, "nothing to reclaim here") || !strings.Contains(out, "VACUUM") || !strings.Contains(out, "OPTIMIZE TABLE kine") {
		t.Errorf("dry run on kine: exit %d\n%s%s", code, out, errOut)
	}
	root := filepath.Join(t.TempDir(), "backups")
	_, errOut, code = c.regghost(t, "", "space", "reclaim", "--backup-dir", root, "--confirm", "--yes")
	if code != 1 || !strings.Contains(errOut, "refused: kine serves none of etcd's compaction, defragmentation and alarm RPCs") {
		t.Errorf("reclaim --confirm on kine: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(root); err == nil {
		t.Error("a refused reclaim wrote to the backup directory")
	}
}
