package etcdscan

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/decode"
)

func TestSettle(t *testing.T) {
	type ev struct {
		c Class
		w Witness
		a Answer
	}
	tests := []struct {
		name        string
		classes     []Class
		evidence    []ev
		wantGhost   bool
		wantSingle  bool
		wantClasses []Class
	}{
		{name: "two witnesses confirm", classes: []Class{ClassOrphanedNamespace},
			evidence:  []ev{{ClassOrphanedNamespace, WitnessEtcd, Confirms}, {ClassOrphanedNamespace, WitnessAPIServer, Confirms}},
			wantGhost: true, wantClasses: []Class{ClassOrphanedNamespace}},
		{name: "api server not asked", classes: []Class{ClassOrphanedNamespace},
			evidence:  []ev{{ClassOrphanedNamespace, WitnessEtcd, Confirms}},
			wantGhost: true, wantSingle: true, wantClasses: []Class{ClassOrphanedNamespace}},
		{name: "api server answer is no evidence", classes: []Class{ClassUndecodable},
			evidence:  []ev{{ClassUndecodable, WitnessEtcd, Confirms}, {ClassUndecodable, WitnessAPIServer, NoEvidence}},
			wantGhost: true, wantSingle: true, wantClasses: []Class{ClassUndecodable}},
		{name: "api server contradicts", classes: []Class{ClassEncryptedUnknown},
			evidence:    []ev{{ClassEncryptedUnknown, WitnessEncryptionConfig, Confirms}, {ClassEncryptedUnknown, WitnessAPIServer, Contradicts}},
			wantClasses: []Class{ClassDisputed}},
		{name: "one class contradicted disputes the whole finding", classes: []Class{ClassUnservedType, ClassOrphanedNamespace},
			evidence: []ev{{ClassUnservedType, WitnessEtcd, Confirms}, {ClassUnservedType, WitnessAPIServer, Confirms},
				{ClassOrphanedNamespace, WitnessEtcd, Confirms}, {ClassOrphanedNamespace, WitnessAPIServer, Contradicts}},
			wantClasses: []Class{ClassDisputed}},
		{name: "one class confirmed twice is enough", classes: []Class{ClassUnservedType, ClassUndecodable},
			evidence: []ev{{ClassUnservedType, WitnessEtcd, Confirms}, {ClassUnservedType, WitnessAPIServer, Confirms},
				{ClassUndecodable, WitnessEtcd, Confirms}},
			wantGhost: true, wantClasses: []Class{ClassUndecodable, ClassUnservedType}},
		{name: "only the api server confirms an encrypted value", classes: []Class{ClassEncryptedUnknown},
			evidence:  []ev{{ClassEncryptedUnknown, WitnessAPIServer, Confirms}, {ClassEncryptedUnknown, WitnessEncryptionConfig, NoEvidence}},
			wantGhost: true, wantSingle: true, wantClasses: []Class{ClassEncryptedUnknown}},
		{name: "suspects stay suspects", classes: []Class{ClassStuckTerminating, ClassKeyMismatch},
			evidence:    []ev{{ClassKeyMismatch, WitnessEtcd, Confirms}, {ClassKeyMismatch, WitnessAPIServer, Contradicts}},
			wantClasses: []Class{ClassDisputed, ClassStuckTerminating}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Finding{Key: "/registry/pods/ns/p"}
			for _, c := range tt.classes {
				f.add(c, "reason of "+string(c))
			}
			for _, e := range tt.evidence {
				f.addEvidence(e.c, e.w, "asked", e.a, "said")
			}
			f.settle()
			if f.Ghost != tt.wantGhost || f.SingleWitness != tt.wantSingle || fmt.Sprint(f.Classes) != fmt.Sprint(tt.wantClasses) {
				t.Errorf("ghost %v single %v classes %v; want %v %v %v (%s)", f.Ghost, f.SingleWitness, f.Classes, tt.wantGhost, tt.wantSingle, tt.wantClasses, f.Reason())
			}
			if len(f.Reasons) != len(f.Classes) {
				t.Errorf("%d reasons for %d classes", len(f.Reasons), len(f.Classes))
			}
		})
	}
}

func TestReadAnswer(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	internal := func(msg string) error { return apierrors.NewInternalError(errors.New(msg)) }
	aescbc := &decode.Encryption{Provider: "aescbc", Version: "v1", KeyName: "old"}
	kms := &decode.Encryption{Provider: "kms", Version: "v2", KeyName: "vault"}
	corrupt := "StorageError: corrupt object, Code: 7, Key: /secrets/ns/s, ResourceVersion: 0, AdditionalErrorMsg: "
	tests := []struct {
		name string
		err  error
		enc  *decode.Encryption
		want apiKind
	}{
		{"read", nil, nil, apiRead},
		{"not found", apierrors.NewNotFound(gr, "s"), nil, apiNotFound},
		{"no provider for the prefix", internal(corrupt + "data from the storage is not transformable revision=0: no matching prefix found"), aescbc, apiCannotTransform},
		{"resource not encrypted at all", internal("identity transformer tried to read encrypted data"), aescbc, apiCannotTransform},
		{"wrong aescbc secret", internal("invalid PKCS7 data (empty or not padded)"), aescbc, apiCannotTransform},
		{"kms plugin never healthy", internal(corrupt + "data from the storage is not transformable revision=0: got unexpected nil transformer"), kms, apiNoEvidence},
		{"kms plugin gone", internal("failed to decrypt DEK, error: rpc error: code = DeadlineExceeded desc = context deadline exceeded"), kms, apiNoEvidence},
		{"kms prefix nobody configures", internal("no matching prefix found"), kms, apiCannotTransform},
		{"kms value, a cipher error (a DEK the plugin gave wrong)", internal("cipher: message authentication failed"), kms, apiNoEvidence},
		{"aesgcm value, a cipher error", internal("cipher: message authentication failed"), &decode.Encryption{Provider: "aesgcm"}, apiCannotTransform},
		{"undecodable, gate on", internal(corrupt + "object not decodable revision=12: proto: illegal wireType 7"), nil, apiCannotDecode},
		{"stored version removed", internal(corrupt + "object not decodable revision=12: request to convert CR from an invalid group/version: example.com/v1"), nil, apiNoEvidence},
		{"conversion webhook down", internal("conversion webhook for example.com/v2, Kind=Widget failed: Post \"https://x\": dial tcp: connection refused"), nil, apiNoEvidence},
		{"timeout", apierrors.NewServerTimeout(gr, "get", 2), nil, apiNoEvidence},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), nil, apiNoEvidence},
		{"forbidden", apierrors.NewForbidden(gr, "s", errors.New("rbac")), nil, apiNoEvidence},
		{"transport error", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), nil, apiNoEvidence},
		{"some other 500", internal("etcdserver: request timed out"), nil, apiNoEvidence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readAnswer(tt.err, tt.enc); got.kind != tt.want {
				t.Errorf("kind %d, want %d (%s)", got.kind, tt.want, got.said)
			}
		})
	}
}
