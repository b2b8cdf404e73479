// Package filesum digests the names and content of files, to tell when any
// of them was rewritten on disk (certificates, kubeconfigs).
package filesum

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
)

// Of is a digest of each named file's name and content, a missing or
// unreadable file counting as such; empty names are left out.
func Of(files ...string) string {
	h := sha256.New()
	for _, f := range files {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(h, "%s\x00unreadable\x00", f)
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
