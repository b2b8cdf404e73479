package members

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// partition groups the members in order by their label (a hash, a state),
// the largest group first, groups of a size by their first member.
// Members keep their order within a group.
func partition(order []string, labels map[string]string) [][]string {
	index := map[string]int{}
	var groups [][]string
	for _, m := range order {
		l := labels[m]
		i, ok := index[l]
		if !ok {
			i = len(groups)
			index[l] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], m)
	}
	slices.SortStableFunc(groups, func(a, b []string) int { return cmp.Compare(len(b), len(a)) })
	return groups
}

// samePartition reports whether a and b group the same members the same
// way, whatever their order.
func samePartition(a, b [][]string) bool {
	norm := func(p [][]string) []string {
		out := make([]string, len(p))
		for i, g := range p {
			g = slices.Clone(g)
			slices.Sort(g)
			out[i] = strings.Join(g, "\x00")
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// quorum is etcd's: more than half of every member, whether it answered
// or not.
func quorum(members int) int { return members/2 + 1 }

// majorityOf is the group of at least a quorum of the cluster's members,
// as etcd 3.6's corruption check finds it (checkPeerHashes); nil when no
// group has one.
func majorityOf(groups [][]string, members int) []string {
	for _, g := range groups {
		if len(g) >= quorum(members) {
			return g
		}
	}
	return nil
}

// judge names the members outside the majority of groups wrong, or says
// why it names none. what says what a group shares ("one hash at revision
// 12"), members how many members the cluster has.
func judge(v *Verdict, basis string, groups [][]string, members int, what string) {
	v.Basis = basis
	maj := majorityOf(groups, members)
	if maj == nil {
		v.Refused = noMajority(groups, members, what)
		return
	}
	v.Majority = maj
	for _, g := range groups {
		if !slices.Equal(g, maj) {
			v.Wrong = append(v.Wrong, g...)
		}
	}
	slices.Sort(v.Wrong)
	does := "does"
	if len(v.Wrong) > 1 {
		does = "do"
	}
	v.Reason = fmt.Sprintf("%s share %s (%d of %d members, a quorum); %s %s not",
		names(maj), what, len(maj), members, names(v.Wrong), does)
}

// noMajority says why no group makes a quorum.
func noMajority(groups [][]string, members int, what string) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, names(g))
	}
	return fmt.Sprintf("no quorum of the %d members (%d needed) shares %s (%s): counting cannot tell which copy is right",
		members, quorum(members), what, strings.Join(parts, " / "))
}

// names lists members: "m1", "m1 and m2", "m0, m1 and m2".
func names(ms []string) string {
	switch len(ms) {
	case 0:
		return "none"
	case 1:
		return ms[0]
	}
	return strings.Join(ms[:len(ms)-1], ", ") + " and " + ms[len(ms)-1]
}
