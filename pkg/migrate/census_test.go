package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

const key32 = "c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ="

const reg = "/registry/"

// crd is a CustomResourceDefinition of widgets.example.com listing versions
// (the last one the storage version) with storedVersions.
func crd(versions []string, stored ...string) string {
	vs := ""
	for i, v := range versions {
		if i > 0 {
			vs += ","
		}
		vs += fmt.Sprintf(`{"name":%q,"served":true,"storage":%v,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, v, i == len(versions)-1)
	}
	sv := ""
	for i, v := range stored {
		if i > 0 {
			sv += ","
		}
		sv += fmt.Sprintf("%q", v)
	}
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","uid":"crd-uid"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[` + vs + `]},` +
		`"status":{"storedVersions":[` + sv + `]}}`
}

func widget(version, ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"example.com/%s","kind":"Widget","metadata":{"name":%q,"namespace":%q,"uid":"uid-%s"}}`, version, name, ns, name)
}

func put(t *testing.T, cli *clientv3.Client, kvs ...string) {
	t.Helper()
	for i := 0; i < len(kvs); i += 2 {
		if _, err := cli.Put(context.Background(), kvs[i], kvs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

func census(t *testing.T, cli *clientv3.Client, name string, dec *decrypt.Decrypter) *Census {
	t.Helper()
	ctx := context.Background()
	st, err := etcdscan.NewEtcdStore(ctx, cli, 2)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := Resolve(ctx, st, reg, dec, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Take(ctx, st, reg, tg, dec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCensusOfStoredVersions: objects not at the CRD's storage version are
// named, with why; objects at a version the CRD no longer lists make that
// version stranded; storedVersions are narrowed only to versions still
// holding objects, never while one cannot be read; a resource sharing the
// first segments of the prefix is not counted.
func TestCensusOfStoredVersions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		versions   []string
		stored     []string
		objects    map[string]string // name -> version
		rewrite    int
		stranded   []string
		narrowTo   []string
		unreadable bool
	}{
		{"all at storage", []string{"v1beta1", "v1"}, []string{"v1beta1", "v1"}, map[string]string{"a": "v1", "b": "v1"}, 0, nil, []string{"v1"}, false},
		{"some at the old version", []string{"v1beta1", "v1"}, []string{"v1beta1", "v1"}, map[string]string{"a": "v1beta1", "b": "v1", "c": "v1beta1"}, 2, nil, []string{"v1beta1", "v1"}, false},
		{"stranded", []string{"v1"}, []string{"v1"}, map[string]string{"a": "v1beta1", "b": "v1"}, 1, []string{"v1beta1"}, []string{"v1"}, false},
		{"unreadable", []string{"v1beta1", "v1"}, []string{"v1beta1", "v1"}, map[string]string{"a": "v1", "broken": ""}, 0, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			put(t, cli, reg+"apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", crd(tc.versions, tc.stored...),
				reg+"example.com/widgetsets/ns/other", widget("v1alpha1", "ns", "other"))
			for name, v := range tc.objects {
				val := widget(v, "ns", name)
				if v == "" {
					val = "{not json"
				}
				put(t, cli, reg+"example.com/widgets/ns/"+name, val)
			}
			c := census(t, cli, "widgets.example.com", nil)
			if c.Objects != len(tc.objects) || len(c.Rewrite) != tc.rewrite {
				t.Fatalf("objects %d, rewrite %d (%+v); want %d, %d", c.Objects, len(c.Rewrite), c.Rewrite, len(tc.objects), tc.rewrite)
			}
			for _, o := range c.Rewrite {
				if o.Why != fmt.Sprintf("stored at %s, not v1", o.StoredAs) || string(o.UID) != "uid-"+o.Name {
					t.Errorf("rewrite %+v", o)
				}
			}
			if got := Stranded(c); fmt.Sprint(got) != fmt.Sprint(tc.stranded) {
				t.Errorf("stranded %v, want %v", got, tc.stranded)
			}
			ch, err := StoredVersionsProven(c)
			if tc.unreadable {
				if err == nil {
					t.Errorf("storedVersions narrowed to %v while an object cannot be read", ch.To)
				}
				return
			}
			if err != nil || fmt.Sprint(ch.To) != fmt.Sprint(tc.narrowTo) {
				t.Errorf("narrow to %v (%v), want %v", ch.To, err, tc.narrowTo)
			}
		})
	}
}

// TestCensusAndHistoryOfKeys: after a rotation from key1 to key2, objects
// still under key1 and plaintext are named; the old revisions under key1
// are counted until etcd compacts past the newest of them, and only then
// may key1 go.
func TestCensusAndHistoryOfKeys(t *testing.T) {
	ctx := context.Background()
	cli, _ := etcdtest.Start(t)
	cfg := func(keys ...string) *decrypt.Decrypter {
		ks := ""
		for _, k := range keys {
			ks += "            - {name: " + k + ", secret: " + key32 + "}\n"
		}
		p := filepath.Join(t.TempDir(), "enc.yaml")
		body := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n" + ks + "      - identity: {}\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := decrypt.Load(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	seal := func(keys []string, key, plain string) string {
		p := filepath.Join(t.TempDir(), "enc.yaml")
		ks := ""
		for _, k := range keys {
			ks += "            - {name: " + k + ", secret: " + key32 + "}\n"
		}
		body := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n" + ks
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ec, err := encryptionconfig.LoadEncryptionConfig(ctx, p, false, "test")
		if err != nil {
			t.Fatal(err)
		}
		out, err := ec.Transformers[schema.GroupResource{Resource: "secrets"}].TransformToStorage(ctx, []byte(plain), value.DefaultContext(key))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	secret := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"namespace":"ns","uid":"u-%s"}}`, name, name)
	}
	key := func(name string) string { return reg + "secrets/ns/" + name }
	for _, n := range []string{"a", "b", "c"} {
		put(t, cli, key(n), seal([]string{"key1"}, key(n), secret(n)))
	}
	put(t, cli, key("plain"), secret("plain"))
	d := cfg("key2", "key1")
	before := census(t, cli, "secrets", d)
	if before.Writer != "aescbc/key2" || len(before.Rewrite) != 4 || before.ByKey["aescbc/key1"] != 3 || before.ByKey[decrypt.Identity] != 1 {
		t.Fatalf("census %+v", before)
	}
	// The API server rewrites them with key2: key1 is then only in history.
	for _, n := range []string{"a", "b", "c", "plain"} {
		put(t, cli, key(n), seal([]string{"key2"}, key(n), secret(n)))
	}
	after := census(t, cli, "secrets", d)
	if after.Left() != 0 {
		t.Fatalf("left %+v", after.Rewrite)
	}
	h, err := OldRevisions(ctx, cli, reg, after)
	if err != nil {
		t.Fatal(err)
	}
	if h.ByKey["aescbc/key1"] != 3 || h.ByKey[decrypt.Identity] != 1 || h.Newest == 0 {
		t.Fatalf("history %+v", h)
	}
	v := Verdicts(before, after, h, nil)
	if len(v) != 2 || v[0].Key != "aescbc/key1" || v[0].MayGo || v[0].Old != 3 || v[0].CompactAt != h.Newest {
		t.Fatalf("verdicts %+v", v)
	}
	// A key written with key1 and deleted is history too.
	put(t, cli, key("gone"), seal([]string{"key1"}, key("gone"), secret("gone")))
	if _, err := cli.Delete(ctx, key("gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, h.Newest); err != nil { // the last rewrite: it keeps the gone key's value
		t.Fatal(err)
	}
	after = census(t, cli, "secrets", d)
	h, err = OldRevisions(ctx, cli, reg, after)
	if err != nil {
		t.Fatal(err)
	}
	if h.ByKey["aescbc/key1"] != 1 || h.ByKey[decrypt.Identity] != 0 {
		t.Fatalf("after compaction %+v", h)
	}
	if v := Verdicts(before, after, h, nil); v[0].MayGo {
		t.Fatalf("key1 may go while a deleted key's old revision holds it: %+v", v)
	}
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	h, err = OldRevisions(ctx, cli, reg, after)
	if err != nil {
		t.Fatal(err)
	}
	v = Verdicts(before, after, h, nil)
	if len(h.ByKey) != 0 || !v[0].MayGo || !v[1].MayGo {
		t.Fatalf("after compacting everything: history %+v, verdicts %+v", h, v)
	}
	// Not read (old etcd, no config): never "may go".
	if v := Verdicts(before, after, nil, fmt.Errorf("not read")); v[0].MayGo {
		t.Fatal("may go without reading the history")
	}
}
