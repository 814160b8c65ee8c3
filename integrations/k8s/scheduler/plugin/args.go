package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"gpuslice.io/k8s/scheduler/place"
)

// Args are the plugin's arguments in a KubeSchedulerConfiguration profile
// (pluginConfig: name Gpuslice, args: {policy: fgd}).
type Args struct {
	// Policy is the core's placement policy: first-fit, best-fit, gpu-packing, fgd, fgd-mem
	// or fgd-mem-tie. Default fgd.
	Policy string `json:"policy"`
	// TieSeed orders equally scored nodes, as `gpuslice pack --seed` does. Default 0.
	TieSeed uint64 `json:"tieSeed"`
	// Workload is an openb pod list (CSV) whose shapes are FGD's target workload, as in
	// `gpuslice pack`. Empty: the pods the scheduler has seen (see docs).
	Workload string `json:"workload"`
	// Coverage is the share of the workload's pods FGD's typical shapes cover. Default 0.95.
	Coverage float64 `json:"coverage"`
	// GangTimeoutSeconds is how long a gang's reserved members wait at Permit for the
	// rest. Default 30.
	GangTimeoutSeconds int `json:"gangTimeoutSeconds"`
}

// DefaultPolicy is the policy of a profile that names none.
const DefaultPolicy = "fgd"

// parseArgs decodes and checks the profile's arguments. The error names what is wrong,
// in one line: the scheduler refuses to start with it.
func parseArgs(obj runtime.Object) (Args, place.Policy, []place.Request, error) {
	a := Args{Policy: DefaultPolicy, Coverage: 0.95, GangTimeoutSeconds: 30}
	if err := frameworkruntime.DecodeInto(obj, &a); err != nil {
		return a, 0, nil, fmt.Errorf("gpuslice: plugin args: %w", err)
	}
	p, err := place.PolicyFromName(a.Policy)
	if err != nil {
		return a, 0, nil, fmt.Errorf("gpuslice: plugin args: %w", err)
	}
	if a.Coverage <= 0 || a.Coverage > 1 {
		return a, 0, nil, fmt.Errorf("gpuslice: plugin args: coverage %g is not in (0, 1]", a.Coverage)
	}
	if a.GangTimeoutSeconds <= 0 {
		return a, 0, nil, fmt.Errorf("gpuslice: plugin args: gangTimeoutSeconds %d is not > 0", a.GangTimeoutSeconds)
	}
	var workload []place.Request
	if a.Workload != "" {
		workload, err = place.LoadOpenbPods(a.Workload)
		if err != nil {
			return a, 0, nil, fmt.Errorf("gpuslice: plugin args: workload: %w", err)
		}
	}
	return a, p, workload, nil
}
