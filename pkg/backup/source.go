package backup

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
)

// Source is what a path given to put things back holds: each command that
// puts things back takes one kind and refuses the others with the command
// that takes it.
type Source string

// The sources regghost puts things back from.
const (
	// SourceUnknown is none of the others (or not there).
	SourceUnknown Source = ""
	// SourceBackup is a regghost backup directory: `regghost restore DIR`.
	SourceBackup Source = "backup"
	// SourceSnapshot is an etcd db file (a snapshot, a member's db, a k3s
	// snapshot, zipped or not): `regghost recover --snapshot FILE` brings
	// chosen objects back; etcdutl snapshot restore the whole etcd.
	SourceSnapshot Source = "snapshot"
)

// boltMagic is bbolt's meta page magic, after the 16-byte page header.
const boltMagic = 0xED0CDAED

// SourceOf reads what path holds, by its first bytes or its backup file.
func SourceOf(path string) Source {
	st, err := os.Stat(path)
	if err != nil {
		return SourceUnknown
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, BackupFile)); err == nil {
			return SourceBackup
		}
		return SourceUnknown
	}
	f, err := os.Open(path)
	if err != nil {
		return SourceUnknown
	}
	defer f.Close()
	head := make([]byte, 20)
	if _, err := io.ReadFull(f, head); err != nil {
		return SourceUnknown
	}
	if string(head[:4]) == "PK\x03\x04" || binary.LittleEndian.Uint32(head[16:20]) == boltMagic {
		return SourceSnapshot
	}
	return SourceUnknown
}
