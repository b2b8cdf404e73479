// Package reclaim gives an etcd cluster its space back after the NOSPACE
// alarm ("etcdserver: mvcc: database space exceeded"), the way etcd's own
// guidance orders it, one member at a time and nothing lost.
//
// Survey reads every member (Status, health, alarms, quota, the disk under
// its data directory when it is on this node) into a Plan: what Run would
// do, in which order, and why it would refuse to start. The members, their
// endpoints and the alarms are read as every command reads them
// (pkg/etcdmembers): each member at the endpoint given that answers as it,
// else at the first of its client URLs that does; one that answers at none
// is in the plan with why. Run then
//
//  1. takes a verified snapshot (pkg/snapshot): compacting ends `history`
//     and `recover --rev` before the compacted revision, and the snapshot
//     keeps those revisions readable (`recover --snapshot`, `history --db`);
//  2. compacts at the snapshot's revision, physically;
//  3. defragments the members one at a time, followers first and the leader
//     last, each only while every member is healthy and the member's disk
//     (where it can be checked) holds the rewrite, and waits for each to
//     come back healthy before the next; who leads is read again right
//     before each defragmentation (leadership may move during a long
//     compaction or rewrite), and a member that leads then waits for every
//     follower left;
//  4. disarms NOSPACE only when every member is below its quota.
//
// It stops at the first member that does not come back healthy and says
// which members were done and which were not. kine and other etcd APIs
// without these RPCs are refused with what to do there instead.
//
// It holds the writers' locks every regghost write holds: this node's, and
// etcd's where etcd grants its lease. Under NOSPACE etcd does not, and the
// plan warns, before the question, that only this node's lock will be held.
// A defragmentation longer than the etcd lock's lease can end it (renewals
// wait behind the rewrite, the leader's for every member): Run then stops
// before its next write, the next member or the disarm, and says so.
//
// A member is healthy when it answers Status without errors and knows a
// leader, serves a linearizable read (a read, not a write: NOSPACE refuses
// puts), and the cluster has no alarm other than NOSPACE (as `etcdctl
// endpoint health` and ahrtr/etcd-defrag judge it).
//
// A member's quota is, in order: what its Status reports (etcd 3.6+), its
// /metrics gauge etcd_server_quota_backend_bytes (3.4+), the node's etcd
// static pod for the member running on this node, and last
// --quota-backend-bytes (etcd's default, 2 GiB). The member's own word
// comes first: a manifest may have been edited without a restart, and a
// flag is a guess.
//
// A member's disk is checked only when its data directory is on this node:
// given with --data-dir, or read from the node's etcd static pod
// (pkg/nodeconfig) for the member of that name. The rewrite needs about the
// size in use, plus a tenth, plus the 16 MiB bbolt grows a file by, and
// must leave diskroom's reserve free. A member on another node cannot be
// checked from here, and the plan says so.
package reclaim
