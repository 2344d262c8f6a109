// kube-apiserver as upstream's cmd/kube-apiserver builds it: its app package's command, run by component-base's cli.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream's main imports it

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
