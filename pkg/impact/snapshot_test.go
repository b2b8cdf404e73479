package impact

import (
	"context"
	"fmt"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// volumeSnapshot is a VolumeSnapshot in ns "shop"; bound, when set, is its
// status.boundVolumeSnapshotContentName.
func volumeSnapshot(name, uid, bound string) string {
	status := ""
	if bound != "" {
		status = fmt.Sprintf(`,"status":{"boundVolumeSnapshotContentName":%q}`, bound)
	}
	return fmt.Sprintf(`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":%q,"namespace":"shop","uid":%q}%s}`, name, uid, status)
}

// snapshotContent is a VolumeSnapshotContent whose spec.volumeSnapshotRef
// names refNS/refName with refUID (no ref at all when refName is empty).
func snapshotContent(name, policy, refNS, refName, refUID string) string {
	ref := ""
	if refName != "" {
		ref = fmt.Sprintf(`,"volumeSnapshotRef":{"kind":"VolumeSnapshot","namespace":%q,"name":%q,"uid":%q}`, refNS, refName, refUID)
	}
	return fmt.Sprintf(`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":%q,"uid":"u-%s"},"spec":{"deletionPolicy":%q,"driver":"hostpath.csi.k8s.io"%s}}`,
		name, name, policy, ref)
}

// TestSnapshotBoundFromEitherSide: a VolumeSnapshot is bound to its
// VolumeSnapshotContent by its status or by the content's
// spec.volumeSnapshotRef; deleting it destroys the storage snapshot of a
// Delete-policy content bound either way, and the effect is refused
// exactly alike. A ref with the snapshot's name but another UID is an
// earlier snapshot's.
func TestSnapshotBoundFromEitherSide(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const (
		snaps    = "/registry/snapshot.storage.k8s.io/volumesnapshots/shop/"
		contents = "/registry/snapshot.storage.k8s.io/volumesnapshotcontents/"
	)
	for k, v := range map[string]string{
		// Bound from the status only (a content without a ref), and from both sides.
		snaps + "by-status":      volumeSnapshot("by-status", "u-by-status", "c-by-status"),
		contents + "c-by-status": snapshotContent("c-by-status", "Delete", "", "", ""),
		snaps + "both":           volumeSnapshot("both", "u-both", "c-both"),
		contents + "c-both":      snapshotContent("c-both", "Delete", "shop", "both", "u-both"),
		// Bound from the content side only: the status is not written yet.
		snaps + "by-ref":      volumeSnapshot("by-ref", "u-by-ref", ""),
		contents + "c-by-ref": snapshotContent("c-by-ref", "Delete", "shop", "by-ref", "u-by-ref"),
		// Retain, bound either way: the storage snapshot stays.
		snaps + "retained":           volumeSnapshot("retained", "u-retained", ""),
		contents + "c-retained":      snapshotContent("c-retained", "Retain", "shop", "retained", "u-retained"),
		snaps + "status-retain":      volumeSnapshot("status-retain", "u-status-retain", "c-status-retain"),
		contents + "c-status-retain": snapshotContent("c-status-retain", "Retain", "shop", "status-retain", "u-status-retain"),
		// The same namespace and name, another UID: an earlier snapshot's content.
		snaps + "reused":      volumeSnapshot("reused", "u-reused-now", ""),
		contents + "c-reused": snapshotContent("c-reused", "Delete", "shop", "reused", "u-reused-before"),
		// The same name in another namespace.
		snaps + "elsewhere":      volumeSnapshot("elsewhere", "u-elsewhere", ""),
		contents + "c-elsewhere": snapshotContent("c-elsewhere", "Delete", "other", "elsewhere", "u-elsewhere"),
		// A pre-provisioned content reserved for the name, its ref without a
		// UID yet: the snapshot controller leaves it when the snapshot goes.
		snaps + "pre-bound":      volumeSnapshot("pre-bound", "u-pre-bound", ""),
		contents + "c-pre-bound": snapshotContent("c-pre-bound", "Delete", "shop", "pre-bound", ""),
		// A snapshot with no UID to compare: the ref's name is enough.
		snaps + "no-uid":      volumeSnapshot("no-uid", "", ""),
		contents + "c-no-uid": snapshotContent("c-no-uid", "Delete", "shop", "no-uid", "u-whatever"),
		// Bound from the content side by an encrypted content.
		snaps + "sealed":      volumeSnapshot("sealed", "u-sealed", ""),
		contents + "c-sealed": encPrefix + snapshotContent("c-sealed", "Delete", "shop", "sealed", "u-sealed"),
		// The status names a content that is not there.
		snaps + "missing": volumeSnapshot("missing", "u-missing", "c-missing"),
		// Not bound at all.
		snaps + "unbound": volumeSnapshot("unbound", "u-unbound", ""),
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
	if err != nil {
		t.Fatal(err)
	}
	withKey := Readers{Decrypter: prefixDecrypter{}}
	tests := []struct {
		name    string
		target  string
		readers Readers
		want    []Kind
		// destroyed is the content of the SnapshotDestroyed effect.
		destroyed string
	}{
		{"bound from the status", "by-status", withKey, []Kind{SnapshotDestroyed, OperatorMayAct}, contents + "c-by-status"},
		{"bound from both sides: one effect", "both", withKey, []Kind{SnapshotDestroyed, OperatorMayAct}, contents + "c-both"},
		{"bound from the content side only", "by-ref", withKey, []Kind{SnapshotDestroyed, OperatorMayAct}, contents + "c-by-ref"},
		{"content side, Retain policy", "retained", withKey, []Kind{OperatorMayAct}, ""},
		{"status side, Retain policy", "status-retain", withKey, []Kind{OperatorMayAct}, ""},
		{"same name, another UID: not this snapshot's", "reused", withKey, []Kind{OperatorMayAct}, ""},
		{"same name, another namespace", "elsewhere", withKey, []Kind{OperatorMayAct}, ""},
		{"a ref without a UID only reserves the name", "pre-bound", withKey, []Kind{OperatorMayAct}, ""},
		{"a snapshot without a UID: bound by name", "no-uid", withKey, []Kind{SnapshotDestroyed, OperatorMayAct}, contents + "c-no-uid"},
		{"an encrypted content, decrypted", "sealed", withKey, []Kind{SnapshotDestroyed, OperatorMayAct}, contents + "c-sealed"},
		{"an encrypted content nobody can read: unknown", "sealed", Readers{}, []Kind{Unknown, OperatorMayAct}, ""},
		{"the status names a missing content: unknown", "missing", withKey, []Kind{Unknown, OperatorMayAct}, ""},
		{"not bound", "unbound", withKey, []Kind{OperatorMayAct}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := snaps + tt.target
			rep, err := Analyze(ctx, store, "/registry/", []etcdscan.Finding{{Key: key, Namespace: "shop", Name: tt.target}}, tt.readers)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Effects[key]
			var kinds []Kind
			for _, e := range got {
				kinds = append(kinds, e.Kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tt.want) {
				t.Fatalf("effects %+v, want kinds %v", got, tt.want)
			}
			refused := rep.Refused(Options{})[key]
			for _, e := range got {
				switch e.Kind {
				case SnapshotDestroyed:
					if !e.Irreversible || e.WayOut != AcceptImpactFlag+" "+string(SnapshotDestroyed) || !equal(e.Objects, []string{tt.destroyed}) {
						t.Errorf("effect %+v, want irreversible, lifted by %s %s, on %s", e, AcceptImpactFlag, SnapshotDestroyed, tt.destroyed)
					}
				case Unknown:
					if !e.Irreversible {
						t.Errorf("unknown effect not irreversible: %+v", e)
					}
				}
			}
			wantRefused := len(tt.want) > 1
			if (len(refused) > 0) != wantRefused {
				t.Errorf("refused without options: %+v, want refused %v", refused, wantRefused)
			}
			if left := rep.Refused(Options{Accept: []Kind{SnapshotDestroyed, Unknown}})[key]; len(left) > 0 {
				t.Errorf("refused with --accept-impact %s,%s: %+v", SnapshotDestroyed, Unknown, left)
			}
		})
	}
}
