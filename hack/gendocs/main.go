// Command gendocs writes what is generated from code ('make docs'):
// regghost's command reference from the commands (docs/reference/*.md and
// docs/man/*.1), and the witness's RBAC rules from the built-in catalog
// (the chart's files/witness-rules.yaml, the static pod's rbac.yaml). Tests
// in cmd and internal/witnessrole fail when the checked-in files differ.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/regghost/regghost/cmd"
	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/internal/witnessrole"
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
	if err := witnessrole.Write("."); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
