package repair

import (
	"context"
	"errors"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/impact"
)

// TestPlanPurge: the plan is made from the scan's report, which is closed
// once the plan holds what it needs, with the impact worked out and the
// options recorded; a failed scan is the plan's error.
func TestPlanPurge(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	store, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		t.Fatal(err)
	}
	rep := report()
	accept := impact.Options{RetainVolumes: true}
	plan, err := PlanPurge(ctx, PlanOptions{Store: store, Selector: Selector{Namespace: "ns1"}, Impact: accept,
		Scan: func(context.Context) (*etcdscan.Report, error) { return rep, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Targets) != 2 || plan.Revision != 100 || plan.Impact == nil || !plan.ImpactOptions.RetainVolumes {
		t.Errorf("plan %+v, want the 2 ghosts of ns1 at revision 100, with the impact and its options", plan)
	}
	if err := rep.Each(func(*etcdscan.Finding) error { return nil }); err == nil {
		t.Error("the scan's report was left open")
	}
	failed := errors.New("etcd went away")
	if _, err := PlanPurge(ctx, PlanOptions{Store: store, Selector: Selector{Namespace: "ns1"},
		Scan: func(context.Context) (*etcdscan.Report, error) { return nil, failed }}); !errors.Is(err, failed) {
		t.Errorf("a failed scan: %v", err)
	}
}

// TestBlockersCarryTheirFlag: each refusal carries the flag that lifts it,
// set where the refusal is made, and BlockerEffects are the effects that
// flag lets go ahead.
func TestBlockersCarryTheirFlag(t *testing.T) {
	rep := report()
	rep.Findings[0].SingleWitness = true
	plan, err := NewPlan(rep, Selector{Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := "/registry/pods/ns1/a", "/registry/pods/ns1/b"
	lb := impact.Effect{Kind: impact.LoadBalancerDeleted, Irreversible: true, WayOut: impact.AcceptImpactFlag + " " + string(impact.LoadBalancerDeleted), Summary: "the load balancer is deleted"}
	storage := impact.Effect{Kind: impact.StorageDestroyed, Irreversible: true, WayOut: impact.RetainVolumesFlag, Summary: "the volume is deleted"}
	plan.SetImpact(&impact.Report{Effects: map[string][]impact.Effect{a: {storage, lb}, b: {lb, {Kind: "pods-deleted", Summary: "reversible"}}}}, impact.Options{})
	want := map[string][]string{
		flagnames.AcceptSingleWitness: nil,
		impact.RetainVolumesFlag:      {a},
		lb.WayOut:                     {a, b},
	}
	blockers := plan.Blockers()
	if len(blockers) != len(want) {
		t.Fatalf("blockers %+v, want one per flag of %v", blockers, want)
	}
	for _, bl := range blockers {
		keys, ok := want[bl.Flag]
		if !ok {
			t.Errorf("blocker %+v: flag %q, want one of %v", bl, bl.Flag, want)
			continue
		}
		effects := plan.BlockerEffects(bl)
		if keys == nil {
			if effects != nil {
				t.Errorf("%s: effects %v, want none", bl.Flag, effects)
			}
			continue
		}
		if len(effects) != len(keys) {
			t.Errorf("%s: effects %v, want on %v", bl.Flag, effects, keys)
		}
		for _, k := range keys {
			if es := effects[k]; len(es) != 1 || es[0].WayOut != bl.Flag {
				t.Errorf("%s: effects of %s %v, want the one it lifts", bl.Flag, k, es)
			}
		}
	}
	plan.SetImpact(plan.Impact, impact.Options{RetainVolumes: true, Accept: []impact.Kind{impact.LoadBalancerDeleted}})
	if bs := plan.Blockers(); len(bs) != 1 || bs[0].Flag != flagnames.AcceptSingleWitness {
		t.Errorf("with both accepted: blockers %+v, want the single witness alone", bs)
	}
}
