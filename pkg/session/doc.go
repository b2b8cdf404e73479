// Package session opens what a command reads a cluster through, once: etcd
// (or an etcd db file) pinned at one revision, the encryption config and the
// API server, with every setting no flag gave found in the node's own
// kube-apiserver configuration; and it runs a scan over them.
//
// Settings are how to reach the cluster; Open returns a Read, the opened
// keyspace, decrypter and API server; Read.Scan runs one scan and adds the
// dangling references to its report.
//
// It is also where the settings meet the workflows, so that a command's
// run is one call: Settings.Scan, Get, History, SaveSnapshot, Leases (the
// audit and its removal), PlanPurge (the plan and the purge), Restorer
// (a restore or the undo of a recovery), FixDangling and MigrateSource
// open the connections each needs, bounded by --command-timeout, and fill
// in what every run shares (the prefix, the notices, etcd's request
// limit, the backups' decryption). A mistake in what the person typed is
// returned as a usage error (pkg/usage).
package session
