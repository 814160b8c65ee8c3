// gpuslice-scheduler is kube-scheduler with the gpuslice placement plugin registered
// (integrations/k8s/scheduler/plugin). Every flag is kube-scheduler's; the plugin is
// enabled by a KubeSchedulerConfiguration profile (docs/kubernetes.md, "The gpuslice
// scheduler").
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"gpuslice.io/k8s/scheduler/plugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(cmd))
}
