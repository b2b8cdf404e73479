// Package members compares the members of one etcd cluster and names the
// one that is wrong, or says why it cannot.
//
// It gathers each member's evidence (its status: leader, raft applied
// index, revision, compacted revision, db size, alarms; and its HashKV at
// one revision every member holds, sampled twice), reads every member's
// keyspace on its own (a client whose only endpoint is that member,
// serializable reads) and merges them key by key in key order, so that
// memory holds a few hundred keys of each member at a time and a hash of
// each value, never the values nor a whole keyspace. It compares the leases each member holds and each
// member's own member list. It decides by majority as etcd 3.6's
// corruption check does: the members whose hash differs from one that a
// quorum of the members share are wrong; with no such quorum, or when the
// hashes moved between the samples, it names none.
//
// Compare only reads. Replace is the repair, one member at a time, in the
// order its plan prints: the plan and its survey (plan.go), the refusals
// (membership.go, record.go: what a run left), the disk budget
// (diskbudget.go) and the time budget (timing.go), then the steps
// (steps.go: evidence, leadership, check, remove, add, promote, compare
// again, disarm), the node's own steps (nodesteps.go) and etcd's
// cluster calls they make (etcdcalls.go: the lock, leader moves, member
// lookups).
package members
