package unstick

import (
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
)

// lbBlocker is a Service held by the cloud load balancer's finalizer.
func lbBlocker() Blocker {
	f := "service.kubernetes.io/load-balancer-cleanup"
	e, _ := impact.StripEffect(f)
	e.Objects = append(e.Objects, "/registry/services/specs/x/lb")
	return Blocker{Key: "/registry/services/specs/x/lb", Remove: []string{f}, Irreversible: []impact.Effect{e}, Resource: catalog.Resource{Version: "v1", Resource: "services"}}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		a       Analysis
		refused string
		next    string
	}{
		{"gone, nothing left", Analysis{Target: "namespace x"}, "", "nothing to do"},
		{"gone, keys left", Analysis{Target: "namespace x", Remaining: 3}, "no longer exists", "3 keys of it are left in etcd: they are ghosts"},
		{"not terminating", Analysis{Target: "namespace x", Exists: true}, "is not terminating", "nothing is stuck"},
		{"an API unavailable", Analysis{Target: "namespace x", Exists: true, Terminating: true, Unavailable: []string{"APIService v1beta1.metrics.k8s.io is not available"}, Blockers: []Blocker{{}}},
			"unavailable", "make these APIs available again"},
		{"held by finalizers nobody serves", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 2,
			Blockers: []Blocker{{Remove: []string{"example.com/x"}, Resource: catalog.Resource{Group: "example.com", Version: "v1", Resource: "widgets"}}}}, "", "remove the finalizers nobody serves from the 1 object that holds it"},
		{"held only by Kubernetes' own finalizers", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 1,
			Blockers: []Blocker{{Keep: []string{"kubernetes.io/pvc-protection"}}}}, "only Kubernetes' own finalizers", "their controller"},
		{"a blocker the API server does not serve", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 1,
			Blockers: []Blocker{{Remove: []string{"example.com/x"}, Resource: catalog.Resource{Group: "example.com", Resource: "widgets"}}}}, "not served", "make it served"},
		{"a finalizer whose controller outside kube-controller-manager leaves something behind", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 1,
			Blockers: []Blocker{lbBlocker()}}, "accept with --accept-impact load-balancer-leaked", "bring back the controller"},
		{"the same, accepted", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 1,
			Blockers: []Blocker{lbBlocker()}, Accepted: []impact.Kind{impact.LoadBalancerLeaked}}, "", "remove the finalizers nobody serves"},
		{"encrypted values nobody read", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 1, Unreadable: []string{"/registry/secrets/x/s"}}, "cannot be read", "encrypted"},
		{"controller not deleting", Analysis{Target: "namespace x", Exists: true, Terminating: true, Remaining: 2}, "deleting controller", "2 objects without finalizers remain"},
		{"own finalizer waiting", Analysis{Target: "namespace x", Exists: true, Terminating: true, Finalizers: []string{"spec:kubernetes"}}, "own finalizer", "nothing is left under it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			a.decide()
			if (tt.refused == "") != (a.Refusal == "") || !strings.Contains(a.Refusal, tt.refused) || !strings.Contains(a.Next, tt.next) {
				t.Errorf("refusal %q next %q; want %q / %q", a.Refusal, a.Next, tt.refused, tt.next)
			}
		})
	}
}

// TestFollowDanglingAPIService: a namespace stuck on discovery of an
// APIService whose Service is gone is unblocked by deleting that
// APIService; one whose Service is down is refused; one that does not
// dangle leaves the general refusal.
func TestFollowDanglingAPIService(t *testing.T) {
	stuck := func() *Analysis {
		return &Analysis{Target: "namespace app", Exists: true, Terminating: true, Remaining: 1,
			Unavailable:      []string{"APIService v1beta1.metrics.example.com (service gone/metrics) is not available", "discovery of group metrics.example.com fails"},
			UnavailableNames: []string{"v1beta1.metrics.example.com"}, failedGroups: []string{"metrics.example.com"}}
	}
	ref := func(state etcdscan.DanglingState, single bool) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Kind: "APIService", Name: "v1beta1.metrics.example.com", State: state, SingleWitness: single, Target: "service gone/metrics", Why: "namespace gone does not exist"}
	}
	tests := []struct {
		name    string
		refs    []etcdscan.DanglingRef
		refused string
		deletes int
		// chosen are the down APIServices named to be deleted.
		chosen []string
	}{
		{"gone", []etcdscan.DanglingRef{ref(etcdscan.DanglingGone, false)}, "", 1, nil},
		{"down", []etcdscan.DanglingRef{ref(etcdscan.DanglingDown, false)}, "or delete it behind a backup with `regghost unstick namespace app --delete-unavailable-apiservice v1beta1.metrics.example.com --confirm`", 0, nil},
		{"gone on etcd's word alone", []etcdscan.DanglingRef{ref(etcdscan.DanglingGone, true)}, "unavailable", 0, nil},
		{"not dangling", nil, "unavailable", 0, nil},
		{"its Service a ghost of a force-deleted namespace", []etcdscan.DanglingRef{{Kind: "APIService", Name: "v1beta1.metrics.example.com", State: etcdscan.DanglingGhost,
			Target: "service gone/metrics", TargetNamespace: "gone", Why: "service gone/metrics is stored but its namespace gone is gone"}},
			"first `regghost purge --namespace gone --accept-impact callers-fail --confirm`, then `regghost unstick namespace", 0, nil},
		// The way out of a down backend the operator takes by name.
		{"down, named to be deleted", []etcdscan.DanglingRef{ref(etcdscan.DanglingDown, false)}, "", 1, []string{"v1beta1.metrics.example.com"}},
		{"down, another named", []etcdscan.DanglingRef{ref(etcdscan.DanglingDown, false)}, "--delete-unavailable-apiservice v1beta1.other.example.com names no APIService whose Service is down", 0, []string{"v1beta1.other.example.com"}},
		{"gone, named as down", []etcdscan.DanglingRef{ref(etcdscan.DanglingGone, false)}, "names no APIService whose Service is down", 0, []string{"v1beta1.metrics.example.com"}},
		// Helm's metrics-server: the printed command carries the flag the
		// fix needs, and says why.
		{"down, managed by Helm", []etcdscan.DanglingRef{func() etcdscan.DanglingRef {
			r := ref(etcdscan.DanglingDown, false)
			r.ManagedBy = []string{"Helm release metrics-server"}
			return r
		}()}, "managed by Helm release metrics-server, which may put it back at its next sync), not dangling: bring service gone/metrics back, or delete it behind a backup with `regghost unstick namespace app --delete-unavailable-apiservice v1beta1.metrics.example.com --accept-managed --confirm`", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := stuck()
			a.DeleteUnavailable = tt.chosen
			a.Follow(tt.refs)
			a.refuseUnknownUnavailable()
			if (tt.refused == "") != (a.Refusal == "") || !strings.Contains(a.Refusal, tt.refused) || len(a.DeleteAPIServices) != tt.deletes {
				t.Errorf("refusal %q, deletes %d; want %q, %d", a.Refusal, len(a.DeleteAPIServices), tt.refused, tt.deletes)
			}
		})
	}
}

// TestDownDeletedFollowsTheResults: what stops until a restore is said of
// an APIService the write deleted, never of one it left alone (available
// again, changed since).
func TestDownDeletedFollowsTheResults(t *testing.T) {
	key := "/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io"
	a := &Analysis{DeleteAPIServices: []etcdscan.DanglingRef{{Key: key, Kind: "APIService", Name: "v1beta1.metrics.k8s.io", State: etcdscan.DanglingDown, Target: "service kube-system/metrics-server"}}}
	if got := a.DownDeleted([]etcdwrite.Result{{Key: key, Outcome: etcdwrite.Deleted}}); len(got) != 1 || !strings.Contains(got[0], "`kubectl top`") {
		t.Errorf("deleted: %q", got)
	}
	for _, o := range []etcdwrite.Outcome{etcdwrite.TargetNotGone, etcdwrite.SkippedChanged, etcdwrite.NotAttempted} {
		if got := a.DownDeleted([]etcdwrite.Result{{Key: key, Outcome: o}}); len(got) != 0 {
			t.Errorf("%s: %q, want nothing said", o, got)
		}
	}
}

// TestNextNamesDanglingAPIServicesByTheirNumber: one dangling APIService is
// named as one (its group, it), two as two.
func TestNextNamesDanglingAPIServicesByTheirNumber(t *testing.T) {
	ref := func(name string) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Kind: "APIService", Name: name, State: etcdscan.DanglingGone, Target: "service gone/metrics", Why: "namespace gone does not exist"}
	}
	for _, tt := range []struct {
		refs []etcdscan.DanglingRef
		want string
	}{
		{[]etcdscan.DanglingRef{ref("v1beta1.a.example.com")}, "delete the dangling APIService v1beta1.a.example.com (namespace gone does not exist): discovery of its group fails and every namespace deletion hangs on it; `regghost unstick ... --confirm` deletes it through"},
		{[]etcdscan.DanglingRef{ref("v1beta1.a.example.com"), ref("v1beta1.b.example.com")}, "delete the dangling APIServices v1beta1.a.example.com (namespace gone does not exist); v1beta1.b.example.com (namespace gone does not exist): discovery of their groups fails and every namespace deletion hangs on it; `regghost unstick ... --confirm` deletes them through"},
	} {
		a := &Analysis{Target: "namespace app", Exists: true, Terminating: true, Remaining: 1}
		for _, r := range tt.refs {
			group := strings.TrimPrefix(r.Name, "v1beta1.")
			a.Unavailable = append(a.Unavailable, "APIService "+r.Name+" (service gone/metrics) is not available", "discovery of group "+group+" fails")
			a.UnavailableNames, a.failedGroups = append(a.UnavailableNames, r.Name), append(a.failedGroups, group)
		}
		a.Follow(tt.refs)
		if !strings.Contains(a.Next, tt.want) {
			t.Errorf("next step %q, want it to say %q", a.Next, tt.want)
		}
	}
}

// TestThePlanNamesTheNudge: a plan that deletes the APIServices holding a
// namespace also plans the annotation that has the namespace controller
// look again, on the namespace it read (its UID), and says it in its next
// step; a plan that deletes none (refused, another APIService named), a
// namespace whose UID was not read, or a CRD plans none.
func TestThePlanNamesTheNudge(t *testing.T) {
	ref := func(state etcdscan.DanglingState) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Kind: "APIService", Name: "v1beta1.metrics.example.com", State: state, Target: "service gone/metrics", Why: "namespace gone does not exist"}
	}
	const says = "annotates namespace app regghost.io/unblocked-at (to have the namespace controller look again), then waits for the deletion to finish"
	tests := []struct {
		name   string
		target string
		uid    string
		ref    etcdscan.DanglingRef
		chosen []string
		want   *NudgePlan
	}{
		{name: "a dangling APIService", target: "namespace app", uid: "u1", ref: ref(etcdscan.DanglingGone),
			want: &NudgePlan{Key: "/registry/namespaces/app", Name: "app", UID: "u1", Annotation: NudgeAnnotation}},
		{name: "a down APIService named to be deleted", target: "namespace app", uid: "u1", ref: ref(etcdscan.DanglingDown), chosen: []string{"v1beta1.metrics.example.com"},
			want: &NudgePlan{Key: "/registry/namespaces/app", Name: "app", UID: "u1", Annotation: NudgeAnnotation}},
		{name: "a down APIService, refused", target: "namespace app", uid: "u1", ref: ref(etcdscan.DanglingDown)},
		{name: "another APIService named", target: "namespace app", uid: "u1", ref: ref(etcdscan.DanglingDown), chosen: []string{"v1beta1.other.example.com"}},
		{name: "the namespace's UID not read", target: "namespace app", ref: ref(etcdscan.DanglingGone)},
		{name: "a CRD", target: "customresourcedefinition widgets.example.com", uid: "u1", ref: ref(etcdscan.DanglingGone)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Analysis{Target: tt.target, Key: "/registry/namespaces/app", UID: tt.uid, Exists: true, Terminating: true, Remaining: 1,
				Unavailable:      []string{"APIService v1beta1.metrics.example.com (service gone/metrics) is not available"},
				UnavailableNames: []string{"v1beta1.metrics.example.com"}, DeleteUnavailable: tt.chosen}
			a.Follow([]etcdscan.DanglingRef{tt.ref})
			a.refuseUnknownUnavailable()
			if tt.want == nil && a.Nudge != nil || tt.want != nil && (a.Nudge == nil || *a.Nudge != *tt.want) {
				t.Fatalf("nudge %+v, want %+v", a.Nudge, tt.want)
			}
			if said := strings.Contains(a.Next, says); said != (tt.want != nil) {
				t.Errorf("next step %q; says the nudge %v, want %v", a.Next, said, tt.want != nil)
			}
		})
	}
}
