package repair

import (
	"context"
	"fmt"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/impact"
)

// PlanOptions configure PlanPurge.
type PlanOptions struct {
	// Scan runs the scan the plan is made from, reading Store at one
	// revision (a command's scan: the findings, and what else it reports).
	// PlanPurge closes the report once the plan holds what it needs.
	Scan func(ctx context.Context) (*etcdscan.Report, error)
	// Store is the keyspace the scan reads, at its revision: what deleting
	// the targets sets in motion is worked out from it too.
	Store etcdscan.Store
	// Selector says what the purge may remove.
	Selector Selector
	// Impact says which irreversible effects may go ahead
	// (impact.AcceptImpactFlag, impact.RetainVolumesFlag).
	Impact impact.Options
	// Readers read values encrypted at rest and ask the API server, for
	// the impact; the zero value reads from etcd alone.
	Readers impact.Readers
}

// PlanPurge makes the plan of a purge: it scans (o.Scan), selects the
// targets (NewPlan), and works out what deleting them sets in motion
// (impact.Analyze, recorded with Plan.SetImpact), all at the scan's
// revision. The plan's Blockers say what a confirmed purge would refuse.
func PlanPurge(ctx context.Context, o PlanOptions) (*Plan, error) {
	rep, err := o.Scan(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := NewPlan(rep, o.Selector)
	rep.Close() // the plan holds what it needs
	if err != nil {
		return nil, err
	}
	effects, err := impact.Analyze(ctx, o.Store, plan.Prefix, plan.Targets, o.Readers)
	if err != nil {
		return nil, fmt.Errorf("work out what the deletes set in motion: %w", err)
	}
	plan.SetImpact(effects, o.Impact)
	readers := o.Readers
	plan.readers = &readers
	return plan, nil
}
