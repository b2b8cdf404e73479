package etcdscan

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fullFinding has every field set, so that a field the codec forgets fails
// the round trip.
func fullFinding(i int) Finding {
	created := time.Unix(1.8e9, 123456789)
	return Finding{
		Key: fmt.Sprintf("/registry/pods/ns/p%d", i), Resource: "pods", APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: fmt.Sprintf("p%d", i),
		Classes: []Class{ClassOrphanedNamespace, ClassStuckTerminating}, Reasons: []string{"namespace ns does not exist", fmt.Sprintf("deleted %dm ago", i)},
		Ghost: true, SingleWitness: true,
		Evidence: []Evidence{{Class: ClassOrphanedNamespace, Witness: WitnessEtcd, Asked: "key /registry/namespaces/ns", Answer: Confirms, Said: "no key"},
			{Class: ClassOrphanedNamespace, Witness: WitnessAPIServer, Asked: "GET namespaces/ns", Answer: NoEvidence, Said: fmt.Sprintf("deleted %dm ago", i)}},
		Absent: []string{"/registry/namespaces/ns"}, UID: fmt.Sprintf("uid-%d", i), Format: "protobuf", Encryption: "aescbc/key1",
		CreateRevision: int64(i), ModRevision: -int64(i) - 1, Created: &created,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	full := fullFinding(1)
	for _, v := range []reflect.Value{reflect.ValueOf(full), reflect.ValueOf(full.Evidence[0])} {
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && v.Field(i).IsZero() {
				t.Fatalf("fullFinding leaves %s.%s unset: the round trip would not check it", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	dict := newSharedStrings()
	// The sentences every finding shares are admitted to the dictionary,
	// the one-offs ("deleted 3m ago", a reason that is also its witness's
	// answer) are not, however often their finding is written again; then
	// strings two findings share fill it, and those past it are written
	// whole.
	roundTrip := func(i int, f Finding) {
		t.Helper()
		got, err := decodeFinding(f.Key, encodeFinding(nil, &f, dict), dict)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Created.Equal(*f.Created) {
			t.Fatalf("finding %d: created %v, want %v", i, got.Created, f.Created)
		}
		got.Created = f.Created
		if !reflect.DeepEqual(*got, f) {
			t.Fatalf("finding %d round trip:\n got %+v\nwant %+v", i, *got, f)
		}
	}
	for i := range 100 {
		roundTrip(i, fullFinding(i))
		roundTrip(i, fullFinding(i))
	}
	if _, ok := dict.ids["deleted 7m ago"]; ok || len(dict.strs) > 20 {
		t.Fatalf("one-off strings admitted: the dictionary holds %d: %q", len(dict.strs), dict.strs)
	}
	if _, ok := dict.ids["namespace ns does not exist"]; !ok {
		t.Fatalf("a shared reason is not in the dictionary: %q", dict.strs)
	}
	for i := range 2 * (maxShared + 50) {
		f := fullFinding(i)
		f.Reasons[1] = fmt.Sprintf("shared by two %d", i/2)
		roundTrip(i, f)
	}
	if len(dict.strs) != maxShared {
		t.Fatalf("dictionary holds %d strings, want %d", len(dict.strs), maxShared)
	}
	bare := Finding{Key: "/registry/x", Classes: []Class{ClassUndecodable}, Reasons: []string{"r"}}
	got, err := decodeFinding(bare.Key, encodeFinding(nil, &bare, dict), dict)
	if err != nil || !reflect.DeepEqual(*got, bare) {
		t.Fatalf("bare finding round trip: %+v, %v", got, err)
	}
}

// TestCodecRefusesDamage: a cut, lengthened or foreign record is an error,
// never a panic or a finding made up.
func TestCodecRefusesDamage(t *testing.T) {
	dict := newSharedStrings()
	earlier := fullFinding(6)
	encodeFinding(nil, &earlier, dict) // what the two share is in the dictionary
	f := fullFinding(7)
	raw := encodeFinding(nil, &f, dict)
	for n := range len(raw) {
		if _, err := decodeFinding(f.Key, raw[:n], dict); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decodes", n, len(raw))
		}
	}
	if _, err := decodeFinding(f.Key, append(raw, 0), dict); err == nil || !strings.Contains(err.Error(), "left over") {
		t.Fatalf("a lengthened record: %v", err)
	}
	other := append([]byte{codecVersion + 1}, raw[1:]...)
	if _, err := decodeFinding(f.Key, other, dict); err == nil {
		t.Fatal("a record of another layout decodes")
	}
	if _, err := decodeFinding(f.Key, raw, newSharedStrings()); err == nil {
		t.Fatal("a record decodes against another file's dictionary")
	}
}
