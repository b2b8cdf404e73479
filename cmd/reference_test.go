package cmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/regghost/regghost/internal/help"
)

// TestReferenceIsCurrent fails when the checked-in command reference
// (docs/reference, docs/man) differs from what the commands generate: run
// 'make docs' and commit the pages.
func TestReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	md, man := filepath.Join(dir, "reference"), filepath.Join(dir, "man")
	if err := help.WriteReference(NewRoot(bytes.NewReader(nil), io.Discard, io.Discard), md, man); err != nil {
		t.Fatal(err)
	}
	for gen, checkedIn := range map[string]string{md: "../docs/reference", man: "../docs/man"} {
		want, err := help.ReferenceFiles(gen)
		if err != nil {
			t.Fatal(err)
		}
		have, _ := help.ReferenceFiles(checkedIn)
		if len(have) != len(want) {
			t.Errorf("%s holds %d pages, the commands make %d: run 'make docs'", checkedIn, len(have), len(want))
		}
		for _, f := range want {
			fresh, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(filepath.Join(checkedIn, filepath.Base(f)))
			if err != nil || !bytes.Equal(old, fresh) {
				t.Errorf("%s/%s differs from the commands: run 'make docs'", checkedIn, filepath.Base(f))
			}
		}
	}
}
