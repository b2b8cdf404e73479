// Command regghost finds and safely removes ghost resources in a Kubernetes
// cluster's etcd. See README.md.
package main

import (
	"os"

	"github.com/regghost/regghost/cmd"
)

func main() { os.Exit(cmd.Execute()) }
