// Command gendocs writes regghost's command reference, generated from the
// commands: docs/reference/*.md and docs/man/*.1 ('make docs'). A test in
// cmd fails when the checked-in pages differ from what this writes.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/regghost/regghost/cmd"
	"github.com/regghost/regghost/internal/help"
)

func main() {
	for _, dir := range []string{"docs/reference", "docs/man"} {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
			os.Exit(1)
		}
	}
	if err := help.WriteReference(cmd.NewRoot(bytes.NewReader(nil), io.Discard, io.Discard), "docs/reference", "docs/man"); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
