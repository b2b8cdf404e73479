package reclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// nearShare is the share of its quota above which a member is said to be
// near it (the rule ahrtr/etcd-defrag and OpenShift use).
const nearShare = 0.8

// disarm disarms every NOSPACE alarm when every member is below its quota
// (etcd would raise it again at the next write otherwise), then reads the
// alarm list back to see them gone. It leaves them when etcd's lock was
// lost (lost closed): another regghost may be writing.
func disarm(ctx context.Context, o Options, res *Result, lost <-chan struct{}) error {
	members := append([]Member{}, res.Plan.Members...)
	probeAll(ctx, o, members)
	d := &Disarm{Alarms: []Alarm{}}
	res.Disarm = d
	for _, m := range members {
		switch {
		case !m.Healthy:
			d.Over = append(d.Over, fmt.Sprintf("%s (not healthy: %s)", m.Name, m.Problem))
		case m.Over():
			d.Over = append(d.Over, fmt.Sprintf("%s (%d of %d bytes)", m.Name, m.DBSize, m.Quota.Bytes))
		case m.Quota.Source == QuotaAssumed:
			// A quota only assumed may be smaller than the member's own:
			// a disarm would be undone at the next write.
			d.Over = append(d.Over, fmt.Sprintf("%s (its quota could not be read and was only assumed; give --quota-backend-bytes)", m.Name))
		case m.Quota.Bytes > 0 && float64(m.DBSize) > nearShare*float64(m.Quota.Bytes):
			d.Near = append(d.Near, fmt.Sprintf("%s (%d of %d bytes)", m.Name, m.DBSize, m.Quota.Bytes))
		}
	}
	alarms, err := listAlarms(ctx, o, members)
	if err != nil {
		d.Why = "the alarm list cannot be read: " + oneLine(err)
		o.progress(Step{Kind: StepDisarm, Result: res})
		return fmt.Errorf("NOSPACE was not disarmed: %s", d.Why)
	}
	for _, a := range alarms {
		if a.typ == pb.AlarmType_NOSPACE {
			d.Alarms = append(d.Alarms, a)
		}
	}
	switch {
	case len(d.Alarms) == 0:
		o.progress(Step{Kind: StepDisarm, Result: res})
		return nil
	case len(d.Over) > 0:
		d.Why = "not every member is below its quota: " + strings.Join(d.Over, ", ") +
			"; etcd would raise it again at the next write. Delete what is not needed (regghost space shows what fills it), then reclaim again"
		o.progress(Step{Kind: StepDisarm, Result: res})
		return fmt.Errorf("NOSPACE was left raised: %s", d.Why)
	}
	if why := lockLost(lost); why != "" {
		d.Why = why
		o.progress(Step{Kind: StepDisarm, Result: res})
		return fmt.Errorf("NOSPACE was not disarmed: %s", d.Why)
	}
	for _, a := range d.Alarms {
		dctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
		_, err := o.Client.AlarmDisarm(dctx, &clientv3.AlarmMember{MemberID: a.id, Alarm: a.typ})
		cancel()
		if err != nil {
			d.Why = fmt.Sprintf("disarm NOSPACE of member %s: %v", orID(a.Member, a.MemberID), oneLine(err))
			o.progress(Step{Kind: StepDisarm, Result: res})
			return fmt.Errorf("NOSPACE was not disarmed: %s", d.Why)
		}
	}
	left, err := listAlarms(ctx, o, members)
	if err != nil {
		d.Why = "the alarm list cannot be read back after the disarm: " + oneLine(err)
	}
	for _, a := range left {
		if a.typ == pb.AlarmType_NOSPACE {
			d.Why = fmt.Sprintf("member %s raised NOSPACE again after the disarm", orID(a.Member, a.MemberID))
		}
	}
	if d.Why != "" {
		o.progress(Step{Kind: StepDisarm, Result: res})
		return errors.New(d.Why)
	}
	d.Disarmed = true
	o.progress(Step{Kind: StepDisarm, Result: res})
	return nil
}
