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
	// Queues are the queues with a guarantee (docs/kubernetes.md, "Queues and
	// preemption"); a pod of any other queue is in the core's queue "default", of
	// guarantee 0 and weight 1.
	Queues []QueueArg `json:"queues"`
}

// QueueArg is one queue: its name (a pod's label gpuslice.io/queue, else its namespace),
// its guaranteed GPU-milli and its weight beyond it (default 1; 0: never over quota).
type QueueArg struct {
	Name            string `json:"name"`
	GuaranteedMilli int64  `json:"guaranteedMilli"`
	Weight          *int   `json:"weight"`
}

// DefaultPolicy is the policy of a profile that names none.
const DefaultPolicy = "fgd"

// parseArgs decodes and checks the profile's arguments. The error names what is wrong,
// in one line: the scheduler refuses to start with it.
func parseArgs(obj runtime.Object) (Args, place.Policy, []place.Request, error) {
	a, p, w, err := decodeArgs(obj)
	if err == nil {
		err = checkQueues(a.Queues)
	}
	return a, p, w, err
}

// checkQueues names the first bad field of the queues, in one line.
func checkQueues(qs []QueueArg) error {
	seen := map[string]bool{}
	for i, q := range qs {
		switch {
		case q.Name == "" || q.Name == "default":
			return fmt.Errorf("gpuslice: plugin args: queues[%d].name %q: a queue needs a name other than \"default\"", i, q.Name)
		case seen[q.Name]:
			return fmt.Errorf("gpuslice: plugin args: queues[%d].name %q is given twice", i, q.Name)
		case q.GuaranteedMilli < 0:
			return fmt.Errorf("gpuslice: plugin args: queues[%d].guaranteedMilli %d is not >= 0", i, q.GuaranteedMilli)
		case q.Weight != nil && *q.Weight < 0:
			return fmt.Errorf("gpuslice: plugin args: queues[%d].weight %d is not >= 0", i, *q.Weight)
		}
		seen[q.Name] = true
	}
	return nil
}

// queueSpecs are the queues in the core's terms.
func queueSpecs(qs []QueueArg) []place.QueueSpec {
	out := make([]place.QueueSpec, len(qs))
	for i, q := range qs {
		out[i] = place.QueueSpec{Name: q.Name, QuotaMilli: q.GuaranteedMilli, Weight: 1}
		if q.Weight != nil {
			out[i].Weight = *q.Weight
		}
	}
	return out
}

func decodeArgs(obj runtime.Object) (Args, place.Policy, []place.Request, error) {
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
