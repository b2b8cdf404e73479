package unstick

import (
	"context"
	"errors"
	"testing"
)

// TestRejudge: under the lock, unstick stops when a finalizer it would
// remove is served again, a blocker changed or went, or the target is now
// refused; it goes on when the analysis is the same.
func TestRejudge(t *testing.T) {
	blocker := Blocker{Key: "/registry/example.com/widgets/ns/w", ModRevision: 7, Remove: []string{"example.com/cleanup"}}
	was := &Analysis{Target: "namespace ns", Blockers: []Blocker{blocker}}
	tests := []struct {
		name string
		now  Analysis
		want error
	}{
		{name: "the same", now: Analysis{Blockers: []Blocker{blocker}}},
		{name: "its controller is back", want: ErrChanged,
			now: Analysis{Blockers: []Blocker{{Key: blocker.Key, ModRevision: 7, Keep: []string{"example.com/cleanup"}}}}},
		{name: "changed since", want: ErrChanged,
			now: Analysis{Blockers: []Blocker{{Key: blocker.Key, ModRevision: 9, Remove: blocker.Remove}}}},
		{name: "gone", want: ErrChanged, now: Analysis{}},
		{name: "refused now", want: ErrChanged, now: Analysis{Refusal: "the namespace is not terminating", Blockers: []Blocker{blocker}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			err := rejudge(context.Background(), was, func(context.Context) (*Analysis, error) { return &now, nil })
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("rejudge: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestRejudgeANamespaceOfTwoBlockers: a namespace's metadata and spec
// finalizers are two blockers under one key; the same analysis again goes on.
func TestRejudgeANamespaceOfTwoBlockers(t *testing.T) {
	meta := Blocker{Key: "/registry/namespaces/ns", ModRevision: 7, Remove: []string{"example.com/x"}}
	spec := Blocker{Key: "/registry/namespaces/ns", ModRevision: 7, Spec: true, Remove: []string{"openshift.io/origin"}}
	was := &Analysis{Target: "namespace ns", Blockers: []Blocker{meta, spec}}
	now := &Analysis{Blockers: []Blocker{meta, spec}}
	if err := rejudge(context.Background(), was, func(context.Context) (*Analysis, error) { return now, nil }); err != nil {
		t.Errorf("rejudge of the same namespace: %v", err)
	}
}
