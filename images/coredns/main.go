// CoreDNS as its release binary is built: the plugin list linked in, then coremain's entry point.
package main

import (
	_ "github.com/coredns/coredns/core/plugin"
	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
