// Command etcd is etcd's own server entry point, built from the etcd module version that
// Kubernetes pins (see ../../go.mod), for kclient's e2e cluster (`cargo xtask e2e`).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
