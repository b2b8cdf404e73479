package reclaim

import (
	"fmt"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// limitedAdvice says what frees space behind an etcd API without etcd's
// storage (kine, k3s's etcd API over SQL): it has no quota and no NOSPACE
// alarm (its database fills the disk instead), its Defragment and Alarm
// RPCs answer "not supported", and a compaction deletes old rows from its
// table without giving the pages back to the disk.
func limitedAdvice(ds etcdwrite.Datastore) string {
	return fmt.Sprintf("%s (an etcd API over SQL, as k3s runs it) has no quota and no NOSPACE alarm, and serves no Defragment: "+
		"there is nothing of etcd's to reclaim. Its compaction deletes old revisions from its table (kube-apiserver asks for one every "+
		"5 minutes; kine's --compact-interval makes it compact by itself), and the database under it keeps the freed pages until it is vacuumed. "+
		"SQLite (k3s's default, /var/lib/rancher/k3s/server/db/state.db): restart k3s (kine runs VACUUM at startup), or stop k3s and run "+
		"sqlite3 state.db 'VACUUM' (it needs free space about the size of the file). "+
		"PostgreSQL: VACUUM FULL kine (it locks the table while it rewrites it; a plain VACUUM only makes the space reusable). "+
		"MySQL: OPTIMIZE TABLE kine. "+
		"Take a backup first (regghost snapshot save FILE writes a logical snapshot of %s).", ds.Name, ds.Name)
}
