package dbfile

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/regghost/regghost/pkg/diskroom"
)

// isZip reports whether path starts as a zip archive does.
func isZip(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && bytes.Equal(magic[:], []byte("PK\x03\x04"))
}

// unzipSnapshot writes the one snapshot a zip holds to a temporary file (in
// $TMPDIR, else /tmp) and returns its path: bbolt reads a real file. A zip
// holding anything but one file, and a disk without room for it, are
// refused before anything is written.
func unzipSnapshot(path string) (string, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", fmt.Errorf("db file %s looks like a zip but cannot be read: %v", path, oneLine(err))
	}
	defer zr.Close()
	var files []*zip.File
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files = append(files, f)
		}
	}
	if len(files) != 1 {
		return "", fmt.Errorf("zip %s holds %d files, not one snapshot (a k3s compressed snapshot holds exactly one)", path, len(files))
	}
	zf := files[0]
	dir := os.TempDir()
	need := zf.UncompressedSize64
	if room, err := diskroom.Of(dir); err == nil && !room.Fits(need) {
		return "", fmt.Errorf("zip %s unzips to %d MiB but %s: set TMPDIR to a larger disk, or unzip it yourself", path, need>>20, room)
	}
	out, err := os.CreateTemp(dir, "regghost-snapshot-*.db")
	if err != nil {
		return "", fmt.Errorf("unzip %s: %w", path, err)
	}
	// A signal while unzipping removes the partial copy, then ends the
	// process as the signal would have.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() { signal.Stop(sigs); close(done) }()
	go func() {
		select {
		case sig := <-sigs:
			os.Remove(out.Name())
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		case <-done:
		}
	}()
	rc, err := zf.Open()
	if err == nil {
		// archive/zip checks the CRC and the size at the end of the copy.
		_, err = io.Copy(out, rc)
		rc.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("unzip %s (%s) to %s: %v", path, zf.Name, dir, oneLine(err))
	}
	return out.Name(), nil
}
