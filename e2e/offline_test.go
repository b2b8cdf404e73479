package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// encryptionConfig encrypts Secrets with aescbc key1 (identity reads the
// rest): the config of the e2e clusters that encrypt at rest.
const encryptionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ=
      - identity: {}
`

// TestOfflineForensics reads a real snapshot of a cluster that encrypts
// Secrets with aescbc: scan, get and diff work on the file alone.
func TestOfflineForensics(t *testing.T) {
	parallel(t)
	encPath := filepath.Join(t.TempDir(), "encryption.yaml")
	mustNoErr(t, "write encryption config", os.WriteFile(encPath, []byte(encryptionConfig), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", encPath}})
	want := plantGhosts(t, c)
	if v := c.value(t, "/registry/secrets/healthy/token"); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("secrets are not encrypted at rest: %q", v[:min(len(v), 30)])
	}
	// The stored Secrets under the current key: the test's own and those
	// every cluster holds (a bootstrap token, Helm releases).
	stored := 0
	secrets, err := c.etcd.Get(context.Background(), "/registry/secrets/", clientv3.WithPrefix())
	mustNoErr(t, "read secrets", err)
	for _, kv := range secrets.Kvs {
		if bytes.HasPrefix(kv.Value, []byte("k8s:enc:aescbc:v1:key1:")) {
			stored++
		}
	}
	dir := t.TempDir()
	snapA := filepath.Join(dir, "a.db")
	if out, errOut, code := c.regghost(t, "", "snapshot", "save", snapA); code != 0 || !strings.Contains(out, "verified") {
		t.Fatalf("snapshot save: exit %d: %s %s", code, out, errOut)
	}

	t.Run("scan the file with the encryption config", func(t *testing.T) {
		out, errOut, code := runBinary(t, "", "scan", "--db", snapA, "--encryption-provider-config", encPath, "-o", "json", "--terminating-after", "1ns")
		if code != 3 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		rep := decodeReport(t, out)
		// Offline, the retired key is decided too: it cannot be decrypted.
		assertFindings(t, rep, want)
		if rep.Decrypted != stored {
			t.Errorf("decrypted %d values, want every stored Secret (%d)", rep.Decrypted, stored)
		}
	})
	t.Run("scan the file without it", func(t *testing.T) {
		out, errOut, code := runBinary(t, "", "scan", "--db", snapA, "-o", "json", "--terminating-after", "1ns")
		if code != 3 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		rep := decodeReport(t, out)
		if rep.Encrypted["aescbc/key1"] != stored {
			t.Errorf("encrypted counts %v", rep.Encrypted)
		}
		offline := map[string][]etcdscan.Class{}
		for k, v := range want {
			if k != "/registry/secrets/mixed/rotated" {
				offline[k] = v
			}
		}
		assertFindings(t, rep, offline)
	})
	t.Run("get decrypts a secret from the file", func(t *testing.T) {
		out, errOut, code := runBinary(t, "", "get", "--db", snapA, "--encryption-provider-config", encPath, "/registry/secrets/healthy/token", "-o", "json")
		if code != 0 || !strings.Contains(out, `"password": "aHVudGVyMg=="`) {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
		_, errOut, code = runBinary(t, "", "get", "--db", snapA, "--encryption-provider-config", encPath, "/registry/secrets/mixed/rotated")
		if code != 1 || !strings.Contains(errOut, "decrypt") {
			t.Errorf("retired key: exit %d: %s", code, errOut)
		}
	})
	t.Run("ls reads the file", func(t *testing.T) {
		out, _, code := runBinary(t, "", "ls", "--db", snapA, "/registry/pods/kb-system/")
		if code != 0 || strings.TrimSpace(out) != "/registry/pods/kb-system/p1\n/registry/pods/kb-system/p2" {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("diff after a purge shows exactly the purged keys", func(t *testing.T) {
		if _, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", filepath.Join(dir, "b"), "--confirm", "--yes"); code != 0 {
			t.Fatalf("purge: exit %d: %s", code, errOut)
		}
		snapB := filepath.Join(dir, "b.db")
		if _, errOut, code := c.regghost(t, "", "snapshot", "save", snapB); code != 0 {
			t.Fatalf("snapshot: %s", errOut)
		}
		out, errOut, code := runBinary(t, "", "diff", snapA, snapB, "-o", "json")
		if code != 0 {
			t.Fatalf("diff exit %d: %s", code, errOut)
		}
		var changes []dbfile.Change
		mustNoErr(t, "decode diff", json.Unmarshal([]byte(out), &changes))
		var removed []string
		for _, ch := range changes {
			if ch.Kind == "removed" {
				removed = append(removed, ch.Key)
			}
			if ch.Kind == "added" {
				t.Errorf("unexpected added key %s", ch.Key)
			}
		}
		sort.Strings(removed)
		if got, exp := strings.Join(removed, " "), strings.Join(ghostKeys(want, "kb-system"), " "); got != exp {
			t.Errorf("removed %s, want %s", got, exp)
		}
	})
	t.Run("damaged files give one clear line", func(t *testing.T) {
		good, err := os.ReadFile(snapA)
		mustNoErr(t, "read", err)
		damaged := append([]byte{}, good...)
		for i := 4096; i < len(damaged) && i < 4096*6; i++ {
			damaged[i] ^= 0x5a
		}
		files := map[string][]byte{"zeroed header": append(make([]byte, 8192), good[8192:]...), "damaged pages": damaged, "truncated": good[:5000], "not a db": []byte("hello")}
		for name, data := range files {
			p := filepath.Join(t.TempDir(), "x.db")
			mustNoErr(t, "write", os.WriteFile(p, data, 0o600))
			_, errOut, code := runBinary(t, "", "scan", "--db", p)
			if code != 1 || !strings.HasPrefix(errOut, "regghost: ") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 || strings.Contains(errOut, "goroutine") {
				t.Errorf("%s: exit %d: %q", name, code, errOut)
			}
		}
		live := filepath.Join(c.dir, "etcd-data", "member", "snap", "db")
		_, errOut, code := runBinary(t, "", "scan", "--db", live)
		if code != 1 || !strings.Contains(errOut, "is locked, probably by a running etcd") {
			t.Errorf("db of a running etcd: exit %d: %s", code, errOut)
		}
		_, errOut, code = runBinary(t, "", "scan", "--db", filepath.Join(dir, "missing.db"))
		if code != 1 || !strings.Contains(errOut, "no such file") {
			t.Errorf("missing file: exit %d: %s", code, errOut)
		}
	})
}
