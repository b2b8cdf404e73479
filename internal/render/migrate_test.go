package render

import (
	"bytes"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/migrate"
)

// TestMigrateNamesWhatBackupsHold: the backups on this node holding the
// resource at another version are named (those restore refuses marked),
// and a backup that could not be read is named with why, never skipped
// beside a verdict.
func TestMigrateNamesWhatBackupsHold(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "gadgets.example.com"
	plan := &migrate.Census{Resource: "gadgets.example.com", ByVersion: map[string]int{}, ByKey: map[string]int{},
		Target: migrate.Target{Resource: schema.GroupResource{Group: "example.com", Resource: "gadgets"}, Version: "v1", CRD: crd}}
	held := migrate.Backups{
		Held: []migrate.Held{{Path: "/var/lib/regghost/backups/p1", ByVersion: map[string]int{"example.com/v1beta1": 5},
			Unlisted: map[string]int{"example.com/v1beta1": 5}}},
		Unreadable: []migrate.Unread{{Path: "/var/lib/regghost/backups/torn", Error: "backup.json: checksum mismatch"}},
	}
	var b bytes.Buffer
	if err := MigratePlan(plan, nil, held, false, 100).Human(&b, false, false); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"/var/lib/regghost/backups/p1: 5 objects at example.com/v1beta1 (no longer listed: refused by restore)",
		"could not be read: what they hold is not known",
		"/var/lib/regghost/backups/torn: backup.json: checksum mismatch",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestIdentityMayGoSaysWhereThePlaintextIs: a verdict that identity
// (plaintext) may leave the configuration says the plaintext is still on
// each member's disk, where, and what removes it; another key's verdict
// does not (issue 51 item 10).
func TestIdentityMayGoSaysWhereThePlaintextIs(t *testing.T) {
	c := &migrate.Census{Resource: "secrets", Writer: "aescbc/key2", Revision: 900}
	for _, tc := range []struct {
		verdict migrate.KeyVerdict
		says    bool
	}{
		{migrate.KeyVerdict{Key: "identity", MayGo: true, PlaintextOnDisk: true}, true},
		{migrate.KeyVerdict{Key: "aescbc/key1", MayGo: true}, false},
	} {
		var b bytes.Buffer
		if err := writeKeyVerdicts(&b, c, []migrate.KeyVerdict{tc.verdict}); err != nil {
			t.Fatal(err)
		}
		out := strings.Join(strings.Fields(b.String()), " ")
		for _, want := range []string{"free pages until that member is defragmented (`regghost space reclaim`, one member at a time)", "in its WAL files until etcd purges them"} {
			if strings.Contains(out, want) != tc.says {
				t.Errorf("%s: says %q: %v, want %v\n%s", tc.verdict.Key, want, !tc.says, tc.says, b.String())
			}
		}
	}
}
