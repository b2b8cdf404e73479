// Package session opens what a command reads a cluster through, once: etcd
// (or an etcd db file) pinned at one revision, the encryption config and the
// API server, with every setting no flag gave found in the node's own
// kube-apiserver configuration; and it runs a scan over them.
//
// Settings are how to reach the cluster; Open returns a Read, the opened
// keyspace, decrypter and API server; Read.Scan runs one scan and adds the
// dangling references to its report.
package session
