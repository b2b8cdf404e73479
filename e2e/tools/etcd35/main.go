// Command etcd35 is the upstream etcd server v3.5.35 (go.etcd.io/etcd/server/v3),
// built from the module proxy for the e2e matrix and the benchmark.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
