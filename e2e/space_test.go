package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/space"
)

// spaceQuota is the e2e etcd's --quota-backend-bytes: small, so that a
// few megabytes of ghosts fill it.
const spaceQuota = 12 << 20

// startQuotaEtcd starts a single-member etcd (TLS, client certificates)
// with --quota-backend-bytes quota, as startEtcd does with its 1 GiB.
func startQuotaEtcd(t *testing.T, quota int) (*cluster, *process, string) {
	t.Helper()
	c := &cluster{dir: t.TempDir(), etcdBin: bins.etcd}
	c.pki = newPKI(t, c.dir)
	clientPort, peerPort := freePort(t), freePort(t)
	c.etcdURL = fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	dataDir := filepath.Join(c.dir, "etcd-data")
	proc := startProcess(t, "etcd", filepath.Join(c.dir, "etcd.log"), c.etcdBin,
		"--name", "e2e", "--data-dir", dataDir,
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e2e="+peer,
		"--cert-file", c.pki.ServerCert, "--key-file", c.pki.ServerKey, "--trusted-ca-file", c.pki.CA, "--client-cert-auth",
		"--log-level", "warn", "--quota-backend-bytes", strconv.Itoa(quota))
	c.etcd = c.etcdClient(t, c.etcdURL)
	waitFor(t, 60*time.Second, "etcd ready", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.etcd.Status(ctx, c.etcdURL)
		return err
	})
	return c, proc, dataDir
}

// TestSpaceFindsWhatFillsEtcd: a namespace's ConfigMaps grow until etcd
// raises NOSPACE, then the namespace's key is force-deleted (etcd applies
// deletes under the alarm): its ConfigMaps are ghosts filling the quota.
//   - serve exports the bytes and the members' sizes and quota, and the
//     chart's alerts fire: quota nearly full naming configmaps, NOSPACE;
//   - space, live, reports the alarm and the quota use, names ghosttown and
//     configmaps first with the ghosts' exact bytes, and bounds the history;
//   - space --db on a copy of the stopped member's db says the same of the
//     values, counts every revision (the deleted namespace key's tombstone
//     too) exactly, and its purge and compaction estimates fit the file.
func TestSpaceFindsWhatFillsEtcd(t *testing.T) {
	parallel(t)
	c, proc, dataDir := startQuotaEtcd(t, spaceQuota)
	ctx := context.Background()
	put := func(key, value string) error {
		_, err := c.etcd.Put(ctx, key, value)
		return err
	}
	object := func(kind, ns, name, data string) string {
		meta := fmt.Sprintf(`"name":%q,"uid":"uid-%s-%s"`, name, ns, name)
		if ns != "" {
			meta += fmt.Sprintf(`,"namespace":%q`, ns)
		}
		return fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{%s},"data":{"d":%q}}`, kind, meta, data)
	}
	for _, ns := range []string{"default", "shop", "ghosttown"} {
		mustNoErr(t, "put namespace", put("/registry/namespaces/"+ns, object("Namespace", "", ns, "")))
	}
	for i := range 5 {
		mustNoErr(t, "put configmap", put(fmt.Sprintf("/registry/configmaps/shop/c%d", i), object("ConfigMap", "shop", fmt.Sprintf("c%d", i), "small")))
	}
	// A Secret written often: history.
	const updates = 20
	for i := range updates {
		mustNoErr(t, "put secret", put("/registry/secrets/shop/token", object("Secret", "shop", "token", strconv.Itoa(i))))
	}

	dir := t.TempDir()
	s := c.startServe(t, dir, "--interval", "1s")
	p := scrapeWithRules(t, dir, s)
	waitFor(t, 90*time.Second, "the quota series in Prometheus", func() error {
		v, ok, err := p.value(`max(regghost_etcd_member_quota_bytes)`)
		if err == nil && (!ok || v != spaceQuota) {
			err = fmt.Errorf("quota %v (present %v), want %d", v, ok, spaceQuota)
		}
		return err
	})

	// Fill ghosttown until etcd refuses: the ghosts are what etcd holds.
	pad := strings.Repeat("x", 256<<10)
	var ghostBytes int64
	ghosts := 0
	for ; ; ghosts++ {
		key := fmt.Sprintf("/registry/configmaps/ghosttown/big-%03d", ghosts)
		value := object("ConfigMap", "ghosttown", fmt.Sprintf("big-%03d", ghosts), pad)
		err := put(key, value)
		if err != nil {
			if !strings.Contains(err.Error(), "database space exceeded") {
				t.Fatalf("put %s: %v", key, err)
			}
			// etcd checks the quota twice: before the proposal (nothing
			// written) and when applying it, where it applies the put
			// that crosses the quota and only then answers "database
			// space exceeded". Which check refuses depends on timing, so
			// the refused key is read back: if etcd holds it, it is a
			// ghost too.
			resp, gerr := c.etcd.Get(ctx, key)
			mustNoErr(t, "read back the refused put", gerr)
			if len(resp.Kvs) == 1 {
				ghostBytes += int64(len(key) + len(value))
				ghosts++
			}
			break
		}
		ghostBytes += int64(len(key) + len(value))
		if ghosts > 200 {
			t.Fatalf("etcd took %d ConfigMaps of 256 KiB under a %d-byte quota", ghosts, spaceQuota)
		}
	}
	alarms, err := c.etcd.AlarmList(ctx)
	mustNoErr(t, "list alarms", err)
	if len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm.String() != "NOSPACE" {
		t.Fatalf("alarms %v, want NOSPACE", alarms.Alarms)
	}
	// Under the alarm etcd still deletes: the namespace is force-deleted.
	c.forceDelete(t, "/registry/namespaces/ghosttown")

	t.Run("serve's alerts name the quota and the resource that grew", func(t *testing.T) {
		waitFor(t, 90*time.Second, "RegghostEtcdQuotaNearlyFull naming configmaps", func() error {
			return firing(p, "RegghostEtcdQuotaNearlyFull", "resource", "configmaps")
		})
		waitFor(t, 60*time.Second, "RegghostEtcdNoSpace", func() error {
			return firing(p, "RegghostEtcdNoSpace", "member", "e2e")
		})
		waitFor(t, 60*time.Second, "the ghosts' bytes exported", func() error {
			v, ok, err := p.value(`max(regghost_etcd_ghost_bytes{namespace="ghosttown"})`)
			if err == nil && (!ok || int64(v) != ghostBytes) {
				err = fmt.Errorf("ghost bytes %v (present %v), want %d", v, ok, ghostBytes)
			}
			return err
		})
	})

	var live space.Report
	t.Run("space names the ghost namespace and the resource that fill etcd", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "space")
		if code != 0 {
			t.Fatalf("space exited %d: %s", code, errOut)
		}
		t.Logf("regghost space:\n%s", out)
		for _, want := range []string{"Alarm NOSPACE is raised on e2e", "orphaned-namespace", "a purge of the " + strconv.Itoa(ghosts) + " ghosts"} {
			if !strings.Contains(out, want) {
				t.Errorf("space's output says nothing of %q", want)
			}
		}
		out, errOut, code = c.regghost(t, "", "space", "-o", "json")
		if code != 0 {
			t.Fatalf("space -o json exited %d: %s", code, errOut)
		}
		mustNoErr(t, "decode space -o json", json.Unmarshal([]byte(out), &live))
		checkSpace(t, &live, ghosts, ghostBytes)
		if len(live.Alarms) != 1 || live.Alarms[0].Alarm != "NOSPACE" || live.Alarms[0].Member != "e2e" {
			t.Errorf("alarms %+v, want NOSPACE on e2e", live.Alarms)
		}
		if len(live.Members) != 1 {
			t.Fatalf("members %+v, want one", live.Members)
		}
		m := live.Members[0]
		if m.Quota != spaceQuota || m.QuotaSource != space.QuotaFromStatus || m.QuotaUse() < 0.9 || !m.Leader {
			t.Errorf("member %+v (quota use %.2f), want the quota from its status, nearly all used", m, m.QuotaUse())
		}
		if live.Estimates.PurgeGhosts.Bytes > m.DBSizeInUse {
			t.Errorf("purge would free %d bytes, more than the %d in use", live.Estimates.PurgeGhosts.Bytes, m.DBSizeInUse)
		}
		// The Secret's older revisions are the history (never compacted):
		// within the bounds, exactly here since each key was created after
		// the compacted revision (none).
		if h := live.Estimates.Compaction; h.HistoryRevisions != updates-1 || max(h.HistoryRevisionsMax, h.HistoryRevisions) != updates-1 {
			t.Errorf("compaction estimate %+v, want the secret's %d older revisions", h, updates-1)
		}
	})

	t.Run("space --db on a copy of the stopped member's db", func(t *testing.T) {
		mustNoErr(t, "stop etcd", syscall.Kill(-proc.cmd.Process.Pid, syscall.SIGTERM))
		select {
		case <-proc.done:
		case <-time.After(30 * time.Second):
			t.Fatal("etcd did not stop")
		}
		copyPath := filepath.Join(t.TempDir(), "db")
		copyDB(t, filepath.Join(dataDir, "member", "snap", "db"), copyPath)
		out, errOut, code := runBinary(t, "", "space", "--db", copyPath)
		if code != 0 {
			t.Fatalf("space --db exited %d: %s", code, errOut)
		}
		t.Logf("regghost space --db:\n%s", out)
		out, errOut, code = runBinary(t, "", "space", "--db", copyPath, "-o", "json")
		if code != 0 {
			t.Fatalf("space --db -o json exited %d: %s", code, errOut)
		}
		var r space.Report
		mustNoErr(t, "decode space --db -o json", json.Unmarshal([]byte(out), &r))
		checkSpace(t, &r, ghosts, ghostBytes)
		if !r.ExactHistory || r.Pages == nil || r.Pages.InUse > r.Pages.FileSize || r.Estimates.PurgeGhosts.Bytes > r.Pages.InUse {
			t.Errorf("exact %v, pages %+v, purge estimate %d: want exact history and the ghosts within the pages in use", r.ExactHistory, r.Pages, r.Estimates.PurgeGhosts.Bytes)
		}
		// History: the Secret's older revisions, and the namespace key's put
		// and delete; every key's values match the live read.
		if h := r.Total; h.HistoryRevisions != updates-1+2 || h.Tombstones != 1 || h.DeletedKeys != 1 {
			t.Errorf("history %+v, want %d revisions of which 1 delete, 1 deleted key", h, updates+1)
		}
		if r.Total.Keys != live.Total.Keys || r.Total.Bytes != live.Total.Bytes {
			t.Errorf("the file holds %d keys %d bytes, live %d keys %d bytes", r.Total.Keys, r.Total.Bytes, live.Total.Keys, live.Total.Bytes)
		}
		if len(r.MostRevisions) == 0 || r.MostRevisions[0].Key != "/registry/secrets/shop/token" || r.MostRevisions[0].Revisions != updates {
			t.Errorf("most revisions %+v, want the secret with %d", r.MostRevisions, updates)
		}
	})
}

// checkSpace checks what space says, live or from the file: ghosttown and
// configmaps first, the ghosts' keys and exact bytes, their class.
func checkSpace(t *testing.T, r *space.Report, ghosts int, ghostBytes int64) {
	t.Helper()
	if len(r.Namespaces) == 0 || r.Namespaces[0].Name != "ghosttown" || r.Namespaces[0].Ghost.Keys != int64(ghosts) || r.Namespaces[0].Ghost.Bytes != ghostBytes {
		t.Errorf("namespaces %+v, want ghosttown first with its %d ghosts of %d bytes", r.Namespaces, ghosts, ghostBytes)
	}
	if len(r.Resources) == 0 || r.Resources[0].Name != "configmaps" || r.Resources[0].Ghost.Bytes != ghostBytes {
		t.Errorf("resources %+v, want configmaps first holding the ghosts", r.Resources)
	}
	if len(r.Classes) != 1 || r.Classes[0].Class != "orphaned-namespace" || r.Classes[0].Keys != int64(ghosts) || r.Classes[0].Namespaces[0] != "ghosttown" {
		t.Errorf("classes %+v, want the %d orphaned-namespace ghosts of ghosttown", r.Classes, ghosts)
	}
	if p := r.Estimates.PurgeGhosts; p.Keys != int64(ghosts) || p.Bytes != ghostBytes || p.AllBytes() != ghostBytes {
		t.Errorf("purge estimate %+v, want %d ghosts, %d bytes and no history", p, ghosts, ghostBytes)
	}
	if r.Ghosts.Bytes*10 < r.Total.Bytes*9 {
		t.Errorf("ghosts hold %d of %d bytes, want nearly all", r.Ghosts.Bytes, r.Total.Bytes)
	}
}

// copyDB copies the db file src to dst.
func copyDB(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	mustNoErr(t, "open "+src, err)
	defer in.Close()
	out, err := os.Create(dst)
	mustNoErr(t, "create "+dst, err)
	_, err = io.Copy(out, in)
	mustNoErr(t, "copy "+src, err)
	mustNoErr(t, "close "+dst, out.Close())
}

// TestSpaceOnKine: on kine (k3s's datastore over SQLite), which has no
// quota, no alarms and no defragmentation, space still counts the values
// and the ghosts, and says what to do there instead.
func TestSpaceOnKine(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{kine: true, noAPIServer: true})
	c.put(t, "/registry/namespaces/default", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"u-default"}}`))
	ghost := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"gone","uid":"u-a"},"data":{"d":"` + strings.Repeat("x", 5000) + `"}}`)
	c.put(t, "/registry/configmaps/gone/a", ghost)
	// Its own backup root: the run's is written by tests beside it.
	backups := t.TempDir()
	out, errOut, code := c.regghost(t, "", "space", "--backup-dir", backups)
	if code != 0 || etcdtest.WithoutUsing(errOut) != "" {
		t.Fatalf("space exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "This is not etcd but kine") || !strings.Contains(out, "VACUUM") || strings.Contains(out, "Note:") {
		t.Errorf("space on kine:\n%s", out)
	}
	out, _, code = c.regghost(t, "", "space", "-o", "json", "--backup-dir", backups)
	var r space.Report
	mustNoErr(t, "decode space -o json", json.Unmarshal([]byte(out), &r))
	if code != 0 || !r.NotEtcd || r.Ghosts.Keys != 1 || r.Ghosts.Bytes != int64(len("/registry/configmaps/gone/a")+len(ghost)) {
		t.Errorf("space on kine: exit %d, not etcd %v, ghosts %+v", code, r.NotEtcd, r.Ghosts)
	}
}
