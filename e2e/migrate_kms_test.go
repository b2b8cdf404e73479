package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kmsplugin "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/testing/v2"

	"github.com/regghost/regghost/pkg/decode"
)

// TestMigrateSecretsToANewKMSKeyID: Secrets under a KMS v2 plugin (the
// gRPC KMS v2 server Kubernetes' own integration tests run, served here on
// a unix socket) whose key ID then rotates from 1 to 2. kube-apiserver
// writes new values under key ID 2 and reads the old ones; migrate asks
// the plugin its key ID, names every Secret still under key ID 1, rewrites
// them through the API server, counts 0 under key ID 1 live, keeps key ID
// 1 while old revisions hold it, and says it may be disabled once etcd is
// compacted past them. With the plugin failing, it says the key IDs were
// not judged.
func TestMigrateSecretsToANewKMSKeyID(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kms") // a unix socket's path is short
	mustNoErr(t, "socket dir", err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kms.sock")
	plugin := kmsplugin.NewBase64Plugin(t, sock) // key ID "1"
	enc := filepath.Join(t.TempDir(), "enc.yaml")
	mustNoErr(t, "write", os.WriteFile(enc, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - kms: {apiVersion: v2, name: vault, endpoint: "unix://`+sock+`", timeout: 3s}
      - identity: {}
`), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", enc}})
	c.createNamespace(t, "vault")
	const secrets = 300
	for i := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%03d", i), Namespace: "vault"}, Data: map[string][]byte{"token": []byte(strings.Repeat("t", 512))}}
		_, err := c.kube.CoreV1().Secrets("vault").Create(ctx, s, metav1.CreateOptions{})
		mustNoErr(t, "create secret", err)
	}
	keyIDs := func() map[string]int {
		resp, err := c.etcd.Get(ctx, "/registry/secrets/", clientv3.WithPrefix())
		mustNoErr(t, "read secrets", err)
		out := map[string]int{}
		for _, kv := range resp.Kvs {
			id, err := decode.KMSKeyID(kv.Value)
			if err != nil {
				id = err.Error()
			}
			out[id]++
		}
		return out
	}
	if ids := keyIDs(); ids["1"] < secrets || len(ids) != 1 {
		t.Fatalf("before the rotation, key IDs %v", ids)
	}

	plugin.UpdateKeyID() // "2"
	waitFor(t, 120*time.Second, "kube-apiserver writes under key ID 2", func() error {
		// A health check asks the plugin its status (at most every 20s),
		// and a new key ID makes kube-apiserver write under it.
		c.kube.Discovery().RESTClient().Get().AbsPath("/healthz/kms-providers").Do(ctx)
		s, err := c.kube.CoreV1().Secrets("vault").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "vault"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		defer c.kube.CoreV1().Secrets("vault").Delete(ctx, s.Name, metav1.DeleteOptions{})
		if id, err := decode.KMSKeyID(c.value(t, "/registry/secrets/vault/"+s.Name)); err != nil || id != "2" {
			return fmt.Errorf("written under key ID %q (%v)", id, err)
		}
		return nil
	})

	before := c.state(t)
	out, errOut, code := c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", enc)
	for _, want := range []string{"under kms v2/vault (key ID 1), not kms v2/vault (key ID 2)", "keep it: objects are still under it"} {
		if code != 3 || !strings.Contains(oneLine(out), want) {
			t.Fatalf("dry run: exit %d, lacks %q\n%s\n%s", code, want, out, errOut)
		}
	}
	c.assertUnchanged(t, "migrate (dry run)", before)
	checkCapture(t, "dry-run", code, out, errOut)
	// versions (and serve, from the same census) count by key ID, and name
	// the key ID the plugin says it writes with.
	if v := secretKeys(t, c, enc); v.Keys["kms v2/vault (key ID 1)"] < secrets || v.Keys["kms v2/vault (key ID 2)"] != 0 || v.Writer != "kms v2/vault" || v.WriterKeyID != "2" {
		t.Errorf("versions before the migration: %+v", v)
	}

	out, errOut, code = c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", enc, "--confirm", "--yes")
	t.Logf("migrate --confirm:\n%s\n%s", out, errOut)
	checkCapture(t, "confirm", code, out, errOut)
	if code != 0 {
		t.Fatalf("migrate --confirm: exit %d", code)
	}
	for _, want := range []string{"0 objects of secrets under kms v2/vault (key ID 1)", "keep it until etcd is compacted at revision"} {
		if !strings.Contains(oneLine(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if ids := keyIDs(); ids["2"] < secrets || len(ids) != 1 {
		t.Errorf("after the migration, key IDs %v", ids)
	}
	c.assertChangedOnly(t, "migrate", before, keysUnderPrefix(t, c, "/registry/secrets/"))
	if v := secretKeys(t, c, enc); v.Keys["kms v2/vault (key ID 1)"] != 0 || v.Keys["kms v2/vault (key ID 2)"] < secrets || v.WriterKeyID != "2" {
		t.Errorf("versions after the migration: %+v", v)
	}

	// Compacted past the rewrites, key ID 1 is held by nothing.
	resp, err := c.etcd.Get(ctx, "x")
	mustNoErr(t, "read revision", err)
	_, err = c.etcd.Compact(ctx, resp.Header.Revision)
	mustNoErr(t, "compact", err)
	out, errOut, code = c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", enc)
	t.Logf("after compaction:\n%s\n%s", out, errOut)
	checkCapture(t, "after-compaction", code, out, errOut)
	if code != 0 || !strings.Contains(oneLine(out), "Secrets in etcd no longer need any key ID of the KMS but 2") {
		t.Errorf("after compaction: exit %d\n%s\n%s", code, out, errOut)
	}

	// The plugin fails: its key IDs are not judged, and migrate says so.
	plugin.EnterFailedState()
	defer plugin.ExitFailedState()
	out, errOut, code = c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", enc)
	checkCapture(t, "plugin-down", code, out, errOut)
	if v := secretKeys(t, c, enc); v.WriterKeyID != "" || !strings.Contains(v.WriterKeyIDUnknown, "for its key ID") {
		t.Errorf("versions with the plugin failing: %+v", v)
	}
	if !strings.Contains(oneLine(out), "their KMS v2 key ID is not judged") || strings.Contains(oneLine(out), "no longer need") {
		t.Errorf("plugin failing: exit %d\n%s\n%s", code, out, errOut)
	}
}

// secretCensus is what versions -o json says of Secrets' keys.
type secretCensus struct {
	Keys               map[string]int `json:"keys"`
	Writer             string         `json:"writer"`
	WriterKeyID        string         `json:"writerKeyID"`
	WriterKeyIDUnknown string         `json:"writerKeyIDUnknown"`
}

// secretKeys is regghost stored-versions' count of Secrets by encryption key,
// and the key that writes them, read with the configuration enc.
func secretKeys(t *testing.T, c *cluster, enc string) secretCensus {
	t.Helper()
	out, errOut, code := c.regghost(t, "", "stored-versions", "--encryption-provider-config", enc, "-o", "json")
	if code != 0 {
		t.Fatalf("versions: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Versions []struct {
			Resource string `json:"resource"`
			secretCensus
		} `json:"versions"`
	}
	mustNoErr(t, "read versions' JSON", json.Unmarshal([]byte(out), &doc))
	for _, v := range doc.Versions {
		if v.Resource == "secrets" {
			return v.secretCensus
		}
	}
	t.Fatalf("versions counts no secrets:\n%s", out)
	return secretCensus{}
}
