// kube-controller-manager as upstream's cmd/kube-controller-manager builds it: its app package's command, run by component-base's cli.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream's main imports it

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
