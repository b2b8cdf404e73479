package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	kmsplugin "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/testing/v2"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// kmsConfig writes an EncryptionConfiguration whose secrets are written by
// KMS v2 plugin "new" and read by "old" too, both at sock.
func kmsConfig(t *testing.T, sock string) *decrypt.Decrypter {
	t.Helper()
	p := filepath.Join(t.TempDir(), "enc.yaml")
	cfg := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - kms: {apiVersion: v2, name: new, endpoint: "unix://` + sock + `", timeout: 1s}
      - kms: {apiVersion: v2, name: old, endpoint: "unix://` + sock + `", timeout: 1s}
      - identity: {}
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := decrypt.Load(context.Background(), p)
	if err != nil {
		t.Fatalf("kms v2 configuration: %v", err)
	}
	return d
}

// kmsValue is a value as kube-apiserver writes it under KMS v2 plugin
// name at keyID (the ciphertext is not read here).
func kmsValue(t *testing.T, name, keyID string) string {
	t.Helper()
	b, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: []byte("ciphertext"), KeyID: keyID, EncryptedDEKSource: []byte("dek"),
		EncryptedDEKSourceType: kmstypes.EncryptedDEKSourceType_AES_GCM_KEY})
	if err != nil {
		t.Fatal(err)
	}
	return "k8s:enc:kms:v2:" + name + ":" + string(b)
}

// TestCensusOfKMSValues: a value under a KMS provider the configuration
// still lists but that no longer writes is rewritten (the API server reads
// it through its plugin); one under the writer is where it should be; one
// under a provider the configuration does not list is named with its way
// out. None is decrypted here. With the plugin down, its key IDs are not
// judged, and the census says why.
func TestCensusOfKMSValues(t *testing.T) {
	d := kmsConfig(t, filepath.Join(t.TempDir(), "kms.sock"))
	cli, _ := etcdtest.Start(t)
	put(t, cli, reg+"secrets/ns/old", kmsValue(t, "old", "1"),
		reg+"secrets/ns/new", kmsValue(t, "new", "1"),
		reg+"secrets/ns/rotated", kmsValue(t, "new", "0"),
		reg+"secrets/ns/gone", kmsValue(t, "gone", "1"))
	c := census(t, cli, "secrets", d)
	if c.Writer != "kms v2/new" || c.NotChecked != 4 || len(c.Rewrite) != 1 || c.Rewrite[0].Name != "old" || len(c.Unreadable) != 1 || c.Unreadable[0].Name != "gone" {
		t.Errorf("census: writer %q, not checked %d, rewrite %+v, unreadable %+v", c.Writer, c.NotChecked, c.Rewrite, c.Unreadable)
	}
	if !strings.Contains(c.KeyIDUnread, "KMS plugin \"new\" has no socket here") || c.WriterKeyID != "" {
		t.Errorf("plugin down: key ID %q, unread %q", c.WriterKeyID, c.KeyIDUnread)
	}
}

// TestCensusOfKMSKeyIDs: with the plugin that writes up (a real KMS v2
// gRPC server), a value under one of its older key IDs is rewritten, one
// whose envelope does not read is named with its way out, and the verdicts
// judge each older key ID (not the plugin, which still writes) until no
// object holds it. The plugin's next key ID makes the current one old.
func TestCensusOfKMSKeyIDs(t *testing.T) {
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "kms.sock")
	plugin := kmsplugin.NewBase64Plugin(t, sock) // key ID "1"
	d := kmsConfig(t, sock)
	cli, _ := etcdtest.Start(t)
	put(t, cli, reg+"secrets/ns/current", kmsValue(t, "new", "1"),
		reg+"secrets/ns/rotated", kmsValue(t, "new", "0"),
		reg+"secrets/ns/torn", "k8s:enc:kms:v2:new:\xff\xff",
		reg+"secrets/ns/old", kmsValue(t, "old", "1"))
	c := census(t, cli, "secrets", d)
	if c.Writer != "kms v2/new (key ID 1)" || c.WriterKeyID != "1" || c.KeyIDUnread != "" {
		t.Fatalf("writer %q, key ID %q, unread %q", c.Writer, c.WriterKeyID, c.KeyIDUnread)
	}
	var rewrite []string
	for _, o := range c.Rewrite {
		rewrite = append(rewrite, o.Name+": "+o.Why)
	}
	want := []string{"old: under kms v2/old, not kms v2/new (key ID 1)", "rotated: under kms v2/new (key ID 0), not kms v2/new (key ID 1)"}
	if strings.Join(rewrite, "\n") != strings.Join(want, "\n") {
		t.Errorf("rewrite:\n%s\nwant:\n%s", strings.Join(rewrite, "\n"), strings.Join(want, "\n"))
	}
	if len(c.Unreadable) != 1 || c.Unreadable[0].Name != "torn" || !strings.Contains(c.Unreadable[0].Why, "KMS v2 envelope") {
		t.Errorf("unreadable %+v", c.Unreadable)
	}
	v := Verdicts(c, c, &History{ByKey: map[string]int{}}, nil)
	got := map[string]KeyVerdict{}
	for _, k := range v {
		got[k.Key] = k
	}
	if _, ok := got["kms v2/new"]; ok {
		t.Errorf("the plugin that writes got a verdict of its own: %+v", v)
	}
	if k := got["kms v2/new (key ID 0)"]; k.KeyID != "0" || k.Live != 1 || k.MayGo {
		t.Errorf("key ID 0: %+v", k)
	}
	if k := got["kms v2/old"]; k.KeyID != "" || k.Live != 1 || k.MayGo {
		t.Errorf("plugin old: %+v", k)
	}
	// Once only the current key ID holds objects, the older one may go.
	for _, name := range []string{"rotated", "torn"} {
		if _, err := cli.Delete(ctx, reg+"secrets/ns/"+name); err != nil {
			t.Fatal(err)
		}
	}
	proof := census(t, cli, "secrets", d)
	for _, k := range Verdicts(c, proof, &History{ByKey: map[string]int{}}, nil) {
		if k.Key == "kms v2/new (key ID 0)" && !k.MayGo {
			t.Errorf("key ID 0 held by nothing: %+v", k)
		}
	}
	// Once no older key ID is seen at all, every other one is judged at once.
	others := Verdicts(proof, proof, &History{ByKey: map[string]int{}}, nil)
	if !slices.ContainsFunc(others, func(k KeyVerdict) bool { return k.OtherKeyIDs && k.MayGo && k.Key == "kms v2/new (other key IDs)" }) {
		t.Errorf("no verdict on the other key IDs: %+v", others)
	}
	if v := Verdicts(proof, proof, nil, fmt.Errorf("not read")); slices.ContainsFunc(v, func(k KeyVerdict) bool { return k.MayGo }) {
		t.Errorf("may go without reading the history: %+v", v)
	}
	// The plugin rotates: key ID 1 is old now.
	plugin.UpdateKeyID()
	c = census(t, cli, "secrets", d)
	if c.Writer != "kms v2/new (key ID 2)" || len(c.Rewrite) != 2 || c.Rewrite[0].Name != "current" || c.Rewrite[1].Name != "old" {
		t.Errorf("after the plugin rotated: writer %q, rewrite %+v", c.Writer, c.Rewrite)
	}
}

// TestPluginSilentAtTheProof: a plugin that said its key ID for the plan
// but not for the count again proves nothing: the run fails, and no key
// ID is said to go (counted by plugin alone, every value looks in place).
func TestPluginSilentAtTheProof(t *testing.T) {
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "kms.sock")
	plugin := kmsplugin.NewBase64Plugin(t, sock)
	d := kmsConfig(t, sock)
	cli, _ := etcdtest.Start(t)
	put(t, cli, reg+"secrets/ns/current", kmsValue(t, "new", "1"), reg+"secrets/ns/rotated", kmsValue(t, "new", "0"))
	plan := census(t, cli, "secrets", d)
	if plan.WriterKeyID != "1" || len(plan.Rewrite) != 1 {
		t.Fatalf("plan: key ID %q, rewrite %+v", plan.WriterKeyID, plan.Rewrite)
	}
	plugin.EnterFailedState()
	proof := census(t, cli, "secrets", d)
	for _, v := range Verdicts(plan, proof, &History{ByKey: map[string]int{}}, nil) {
		if v.MayGo && (v.KeyID != "" || v.OtherKeyIDs) {
			t.Errorf("a key ID said to go while the plugin is silent: %+v", v)
		}
	}
	plan.Rewrite = nil // nothing for the API server: the proof is the point
	_, err := Run(ctx, plan, Options{Again: func(context.Context) (*Census, error) { return proof, nil }})
	if err == nil || !strings.Contains(err.Error(), "did not say its key ID when counted again") {
		t.Errorf("run with a silent plugin at the proof: %v", err)
	}
}

// copyStore is a Store that is not a live etcd (as a --db file is).
type copyStore struct{ etcdscan.Store }

// TestOfflineNeverAsksThePlugin: a copy of etcd (--db) is not judged
// against the key ID the plugin writes with today, even with the plugin
// up: the key IDs stay unjudged, with why, and no key ID is said to go.
func TestOfflineNeverAsksThePlugin(t *testing.T) {
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "kms.sock")
	kmsplugin.NewBase64Plugin(t, sock) // key ID "1", up
	d := kmsConfig(t, sock)
	cli, _ := etcdtest.Start(t)
	put(t, cli, reg+"secrets/ns/current", kmsValue(t, "new", "1"), reg+"secrets/ns/rotated", kmsValue(t, "new", "0"))
	live, err := etcdscan.NewEtcdStore(ctx, cli, 2)
	if err != nil {
		t.Fatal(err)
	}
	st := copyStore{live}
	tg, err := Resolve(ctx, st, reg, d, "secrets")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Take(ctx, st, reg, tg, d)
	if err != nil {
		t.Fatal(err)
	}
	if c.WriterKeyID != "" || !strings.Contains(c.KeyIDUnread, "not asked offline") {
		t.Errorf("offline census: key ID %q, unread %q", c.WriterKeyID, c.KeyIDUnread)
	}
	for _, v := range Verdicts(c, c, &History{ByKey: map[string]int{}}, nil) {
		if v.MayGo && (v.KeyID != "" || v.OtherKeyIDs) {
			t.Errorf("a key ID judged offline: %+v", v)
		}
	}
}
