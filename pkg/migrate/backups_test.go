package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/backup"
)

// TestInBackups: a backup holding values of the resource under an old key,
// or whose snapshot predates the count, is named; one holding other
// resources only, or values under the key that writes, is not; a missing
// root holds nothing.
func TestInBackups(t *testing.T) {
	root := t.TempDir()
	write := func(name string, snapRev int64, entries ...backup.Entry) {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b := &backup.Backup{Prefix: "/registry/", Entries: entries}
		if snapRev > 0 {
			b.Snapshot = &backup.SnapshotInfo{Revision: snapRev}
		}
		if _, _, err := backup.WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	write("a-old-key", 0, backup.Entry{Key: "/registry/secrets/ns/a", Value: []byte("k8s:enc:aescbc:v1:key1:x")},
		backup.Entry{Key: "/registry/secrets/ns/b", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("b-other-resource", 0, backup.Entry{Key: "/registry/configmaps/ns/a", Value: []byte("k8s:enc:aescbc:v1:key1:x")})
	write("c-write-key", 0, backup.Entry{Key: "/registry/secrets/ns/c", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("d-old-snapshot", 40, backup.Entry{Key: "/registry/secrets/ns/d", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("e-new-snapshot", 60, backup.Entry{Key: "/registry/secrets/ns/e", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	c := &Census{Target: Target{Resource: schema.GroupResource{Resource: "secrets"}, Prefix: "secrets"}, Writer: "aescbc/key2", Revision: 50}
	if held, err := InBackups(root, c, false); err != nil || len(held) != 1 {
		t.Errorf("not rotated: a snapshot-only backup named: %+v, %v", held, err)
	}
	held, err := InBackups(root, c, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || filepath.Base(held[0].Path) != "a-old-key" || held[0].ByKey["aescbc/key1"] != 1 || len(held[0].ByKey) != 1 ||
		filepath.Base(held[1].Path) != "d-old-snapshot" || held[1].SnapshotRevision != 40 {
		t.Errorf("held %+v", held)
	}
	if held, err := InBackups(filepath.Join(root, "none"), c, true); err != nil || held != nil {
		t.Errorf("missing root: %v, %v", held, err)
	}
}

// TestReadBackupsCountsVersions: a custom resource's values in a backup are
// counted by stored version, those at the storage version left out, those
// at a version the CRD no longer lists named as the ones restore refuses;
// a value whose version cannot be read is counted apart; a backup that does
// not read is named with its error and given no verdict; InBackups stays
// as it was (keys only, unreadable backups skipped).
func TestReadBackupsCountsVersions(t *testing.T) {
	root := t.TempDir()
	write := func(name string, entries ...backup.Entry) {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b := &backup.Backup{Prefix: "/registry/", Entries: entries}
		if _, _, err := backup.WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	gadget := func(name, version string) backup.Entry {
		return backup.Entry{Key: "/registry/example.com/gadgets/ns/" + name,
			Value: []byte(`{"apiVersion":"example.com/` + version + `","kind":"Gadget","metadata":{"name":"` + name + `","namespace":"ns"}}`)}
	}
	write("a-purge", gadget("g1", "v1beta1"), gadget("g2", "v1beta1"), gadget("g3", "v1alpha2"), gadget("g4", "v1"),
		backup.Entry{Key: "/registry/example.com/gadgets/ns/g5", Value: []byte("k8s:enc:aescbc:v1:key1:x")},
		// another resource sharing the prefix's first segment
		backup.Entry{Key: "/registry/example.com/gadgetsx/ns/g", Value: gadget("g", "v1beta1").Value})
	write("b-storage-version-only", gadget("g6", "v1"))
	// a backup cut short: its checksum does not match
	bad := filepath.Join(root, "c-torn")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, backup.BackupFile), []byte(`{"format":"regghost.io/backup/v1","entries":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1alpha2"}, {Name: "v1", Served: true, Storage: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}}}
	c := &Census{Target: Target{Resource: schema.GroupResource{Group: "example.com", Resource: "gadgets"}, Prefix: "example.com/gadgets", Version: "v1", CRD: crd}, Revision: 50}

	got, err := ReadBackups(context.Background(), root, c, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Held) != 1 {
		t.Fatalf("held %+v, want a-purge alone", got.Held)
	}
	h := got.Held[0]
	if filepath.Base(h.Path) != "a-purge" || h.ByVersion["example.com/v1beta1"] != 2 || h.ByVersion["example.com/v1alpha2"] != 1 || len(h.ByVersion) != 2 ||
		h.Unlisted["example.com/v1beta1"] != 2 || len(h.Unlisted) != 1 || h.VersionUnread != 1 || len(h.ByKey) != 0 {
		t.Errorf("held %+v", h)
	}
	if len(got.Unreadable) != 1 || filepath.Base(got.Unreadable[0].Path) != "c-torn" || got.Unreadable[0].Error == "" {
		t.Errorf("unreadable %+v, want c-torn named with its error", got.Unreadable)
	}

	// With an EncryptionConfiguration's writer: the keys are counted as
	// before, and InBackups names the keys alone.
	c.Writer = "aescbc/key2"
	got, err = ReadBackups(context.Background(), root, c, false, nil)
	if err != nil || len(got.Held) != 2 || got.Held[0].ByKey["aescbc/key1"] != 1 || got.Held[0].ByKey["identity"] != 4 || got.Held[1].ByKey["identity"] != 1 {
		t.Errorf("with a writer: %+v, %v", got, err)
	}
	held, err := InBackups(root, c, false)
	if err != nil || len(held) != 2 || held[0].ByVersion != nil || held[0].VersionUnread != 0 {
		t.Errorf("InBackups %+v, %v", held, err)
	}

	// A built-in resource without a writer: nothing to count.
	if got, err := ReadBackups(context.Background(), root, &Census{Target: Target{Resource: schema.GroupResource{Resource: "secrets"}, Prefix: "secrets"}}, false, nil); err != nil || len(got.Held)+len(got.Unreadable) != 0 {
		t.Errorf("built-in, no writer: %+v, %v", got, err)
	}
}
