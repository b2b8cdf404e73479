// Package space accounts for where an etcd keyspace's bytes are: the
// values held now and the history held since the last compaction, by
// resource, by namespace and by ghost class, the largest keys and the keys
// with the most revisions; per member the db size, the size in use, the
// fragmented share, the quota and the alarms; and, before anything is done,
// what a purge of the ghosts and a compaction at the current revision would
// free.
//
// The values are counted as a scan reads them (Account wraps the scan's
// store), so the ghost classes are the scan's own and the keyspace is read
// once. Live, the history of each key is bounded from its version and its
// create and mod revisions against etcd's compacted revision (etcd serves
// no per-key revision count; deletes and a key's earlier lives are not
// seen); from a db file (WalkFile) every revision held is counted, and the
// file's pages in use are read from bbolt. Memory stays bounded as a
// scan's: counts per resource and namespace, a small record per key, and
// bounded heaps for the largest keys and the keys with the most revisions.
package space
