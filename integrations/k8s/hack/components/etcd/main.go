// Command etcd is the test cluster's etcd: the real server's entry point, built from
// go.etcd.io/etcd/server/v3 at the version in ../../versions.sh. The server module points
// its sibling modules (api, client, pkg) at its own tree with replace directives, so
// `go install go.etcd.io/etcd/server/v3@vX` fails; this module requires them at the
// server's version instead. Nothing here may change what etcd does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
