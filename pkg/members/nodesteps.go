package members

import (
	"fmt"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// localEtcd is what this node's files say of the member replaced, when it
// runs here.
type localEtcd struct {
	DataDir, WalDir, Source string
	// DataMount and WalMount are set when the directory is a mount point
	// of its own: it cannot be renamed (EBUSY), so what it holds is moved
	// aside within it.
	DataMount, WalMount bool
}

// onNode is what to run on the member's node: etcd there must start again
// on an empty data directory (and write-ahead log directory), joining the
// cluster as it now is. local names the node's own directories when this
// is the member's node; copy is the size of the leader's db, which the new
// member copies (0: unknown).
func onNode(member string, peers []string, list []*pb.Member, local *localEtcd, copy int64) []string {
	var initial []string
	for _, m := range list {
		name := m.Name
		if slices.Equal(m.PeerURLs, peers) {
			name = member
		}
		if name == "" {
			continue
		}
		for _, p := range m.PeerURLs {
			initial = append(initial, name+"="+p)
		}
	}
	if findByPeers(list, peers) == nil {
		for _, p := range peers {
			initial = append(initial, member+"="+p)
		}
	}
	slices.Sort(initial)
	data, wal := "/var/lib/etcd", ""
	moveData := "kubeadm: mv /var/lib/etcd /var/lib/etcd.wrong-" + member +
		"; where /var/lib/etcd is a mount point of its own, what it holds instead: mv /var/lib/etcd/member /var/lib/etcd/member.wrong-" + member
	moveWal := "and its --wal-dir likewise when it keeps one apart (kubeadm does not)"
	dataFlag, walFlag := "an empty --data-dir "+data, ""
	if local != nil && local.DataDir != "" {
		data, wal = local.DataDir, local.WalDir
		dataFlag = "an empty --data-dir " + strings.TrimSpace(data)
		moveData = fmt.Sprintf("here, as %s says: mv %s %s.wrong-%s", local.Source, data, data, member)
		if local.DataMount {
			// etcd takes a data directory without member/ for an empty
			// one (other names in it are warned of and left alone).
			moveData = fmt.Sprintf("here, as %s says; %s is a mount point of its own, so what it holds moves aside within it: mv %s/member %s/member.wrong-%s",
				local.Source, data, data, data, member)
			dataFlag = fmt.Sprintf("--data-dir %s (holding no member/ now)", strings.TrimSpace(data))
		}
		moveWal = "it keeps no --wal-dir apart"
		switch {
		case wal != "" && local.WalMount:
			// etcd creates a new log by removing its --wal-dir, with all in
			// it, and renaming a new one into its place: in a mount point
			// that removes what was moved aside, then fails.
			moveWal = fmt.Sprintf("and its --wal-dir %s, a mount point of its own where etcd cannot create a new log (it removes the directory, all in it, "+
				"and renames a new one into its place): mkdir %s/wal.wrong-%s && mv %s/*.wal %s/wal.wrong-%s/, and give etcd a new --wal-dir within it",
				wal, wal, member, wal, wal, member)
			walFlag = fmt.Sprintf(", --wal-dir %s/wal", wal)
		case wal != "":
			moveWal = fmt.Sprintf("and its --wal-dir: mv %s %s.wrong-%s", wal, wal, member)
		}
	}
	flags := "two flags"
	if walFlag != "" {
		flags = "flags"
	}
	room := ""
	if copy > 0 {
		room = fmt.Sprintf(" (its disk needs about %s free for the copy the new member takes, beside the directory moved aside)", sizeWords(copy))
	}
	return []string{
		"stop its etcd (kubeadm: move /etc/kubernetes/manifests/etcd.yaml out of the manifests directory and wait for the container to stop; systemd: systemctl stop etcd)",
		"move its data directory aside, never delete it (" + moveData + "), " + moveWal + ": it is the evidence of what it held" + room,
		"start it again with the same --name " + member + " and URLs, " + dataFlag + walFlag +
			", --initial-cluster-state=existing and --initial-cluster=" + strings.Join(initial, ",") +
			" (kubeadm: set those " + flags + " in the manifest and move it back)",
	}
}

// sizeWords is a size in MiB or GiB.
func sizeWords(n int64) string {
	if n < 0 {
		return "-" + sizeWords(-n)
	}
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}
