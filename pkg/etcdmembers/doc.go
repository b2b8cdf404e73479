// Package etcdmembers reads the members of one etcd cluster: the member
// list, each member's status read at an endpoint that answers as it, the
// alarms raised, and a client on chosen members' client URLs.
//
// It is the room below every command that walks the members (space,
// members, reclaim): what a member is, how it is reached, and how the
// cluster is reached from any node, the sick member's own included (its
// manifest names only https://127.0.0.1:2379, the member a replacement
// removes).
package etcdmembers
