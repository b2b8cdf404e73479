// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3), built
// from the module proxy for the e2e tests and the demo.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
