// Package plugin is the gpuslice kube-scheduler plugin: Filter, Score and Reserve ask the C
// placement core (package place, the code of `gpuslice pack`) about each node, per GPU,
// with the profile's policy; Permit holds a gang's pods until all of them have a place.
package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpuslice.io/k8s/scheduler/place"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "Gpuslice"

const stateKey fwk.StateKey = Name + "/request"

// Plugin is the gpuslice scheduler plugin.
type Plugin struct {
	handle      fwk.Handle
	view        *view
	gangTimeout time.Duration
	queues      []place.QueueSpec
}

var (
	_ fwk.PreFilterPlugin  = (*Plugin)(nil)
	_ fwk.FilterPlugin     = (*Plugin)(nil)
	_ fwk.PreScorePlugin   = (*Plugin)(nil)
	_ fwk.ScorePlugin      = (*Plugin)(nil)
	_ fwk.ReservePlugin    = (*Plugin)(nil)
	_ fwk.PermitPlugin     = (*Plugin)(nil)
	_ fwk.PreBindPlugin    = (*Plugin)(nil)
	_ fwk.PostFilterPlugin = (*Plugin)(nil)
)

// New is the plugin's factory, for app.WithPlugin.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, policy, workload, err := parseArgs(obj)
	if err != nil {
		return nil, err
	}
	pl := &Plugin{handle: h, gangTimeout: time.Duration(args.GangTimeoutSeconds) * time.Second,
		queues: queueSpecs(args.Queues),
		view:   newView(policy, args.TieSeed, workload, args.Coverage)}
	if h != nil && h.SharedInformerFactory() != nil {
		if err := pl.watch(h); err != nil {
			return nil, fmt.Errorf("gpuslice: %w", err)
		}
	}
	klog.FromContext(ctx).Info("gpuslice: plugin ready", "policy", policy.String(), "workloadPods", len(workload), "queues", len(args.Queues))
	return pl, nil
}

// Name is the plugin's name.
func (pl *Plugin) Name() string { return Name }

// cycleState is the pod's request, read once per scheduling cycle.
type cycleState struct {
	pr      podRequest
	gang    string // namespace/name, or ""
	gangN   int
	decided string // the node gs_place_decide picks over the whole cluster
}

func (s *cycleState) Clone() fwk.StateData { return s }

func stateOf(cs fwk.CycleState) (*cycleState, *fwk.Status) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("gpuslice: no PreFilter state: %w", err))
	}
	return d.(*cycleState), nil
}

// PreFilter reads the pod's request and gang. A malformed annotation or gang label, or a
// gang whose pods do not all exist yet, leaves the pod Pending with the reason.
func (pl *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	pr, err := requestOf(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gpuslice: "+err.Error())
	}
	gang, size, err := gangOf(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gpuslice: "+err.Error())
	}
	if gang != "" {
		if n := pl.gangMembers(pod, gang); n < size {
			return nil, fwk.NewStatus(fwk.Unschedulable,
				fmt.Sprintf("gpuslice: gang %s has %d of its %d pods", gang, n, size))
		}
	}
	cs.Write(stateKey, &cycleState{pr: pr, gang: gang, gangN: size})
	return nil, nil
}

// PreFilterExtensions: none; the pods the framework adds in preemption dry runs are not
// counted per GPU (see docs).
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter is the core's fit on this node: CPU, memory and a share on each GPU the pod asks
// for, per GPU, not the node's total.
func (pl *Plugin) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	st, s := stateOf(cs)
	if s != nil {
		return s
	}
	node := ni.Node().Name
	if ok, why := pl.view.fits(node, st.pr); !ok {
		return fwk.NewStatus(fwk.Unschedulable, "gpuslice: per-GPU fit: "+why)
	}
	return nil
}

// PreScore asks the core which node it would choose over the whole cluster, so that Score
// can give it the top score: with the other score plugins off, kube-scheduler then places
// as `gpuslice pack` does.
func (pl *Plugin) PreScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	st, s := stateOf(cs)
	if s != nil {
		return s
	}
	st.decided = pl.view.decide(st.pr)
	return nil
}

// Score is the policy's score of the node (see view.score), normalized to 0..100 by
// NormalizeScore.
func (pl *Plugin) Score(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	st, s := stateOf(cs)
	if s != nil {
		return 0, s
	}
	v, ok := pl.view.score(ni.Node().Name, st.pr)
	if !ok {
		return 0, nil
	}
	return v, nil
}

// ScoreExtensions normalizes the scores.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps the scores onto 0..99 and gives 100 to the core's own choice when it
// is among the nodes (it is, unless another filter refused it).
func (pl *Plugin) NormalizeScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	st, s := stateOf(cs)
	if s != nil {
		return s
	}
	normalize(scores, st.decided)
	return nil
}

func normalize(scores fwk.NodeScoreList, decided string) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	top := false
	for i := range scores {
		if hi > lo {
			scores[i].Score = (scores[i].Score - lo) * (fwk.MaxNodeScore - 1) / (hi - lo)
		} else {
			scores[i].Score = fwk.MaxNodeScore - 1
		}
		if scores[i].Name == decided {
			scores[i].Score, top = fwk.MaxNodeScore, true
		}
	}
	if !top {
		for i := range scores {
			if scores[i].Score == fwk.MaxNodeScore-1 {
				scores[i].Score = fwk.MaxNodeScore
			}
		}
	}
}

// Reserve takes the pod's share in the model, on the GPUs the policy picks on this node.
func (pl *Plugin) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	st, s := stateOf(cs)
	if s != nil {
		return s
	}
	if _, err := pl.view.assume(pod.UID, node, st.pr, st.gang); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, "gpuslice: "+err.Error())
	}
	return nil
}

// Unreserve gives the share back.
func (pl *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node string) {
	pl.view.setHolder(pod.UID, nil)
	if st, s := stateOf(cs); s == nil && st.gang != "" {
		pl.rejectGang(st.gang, pod.UID, fmt.Sprintf("gpuslice: gang %s: member %s was not placed", st.gang, pod.Name))
	}
}

// PreBindPreFlight: only a GPU pod gets its GPUs written.
func (pl *Plugin) PreBindPreFlight(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	st, s := stateOf(cs)
	if s != nil || st.pr.req.NumGPU == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{}, nil
}

// PreBind writes the GPUs chosen into the pod's annotation gpuslice.io/gpus, so that a
// restarted scheduler knows them.
func (pl *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	mask := pl.view.maskOf(pod.UID)
	if mask == 0 || pl.handle == nil {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnoGPUs, formatGPUs(mask))
	_, err := pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name,
		types.StrategicMergePatchType, []byte(patch), metav1PatchOptions)
	if err != nil {
		// The binding does not depend on it: only a restarted scheduler reads it back, and
		// without it counts the pod on the tightest GPUs. Logged, not fatal: the built-in
		// system:kube-scheduler role may not patch pods (docs/kubernetes.md).
		klog.FromContext(ctx).Error(err, "gpuslice: writing the GPUs chosen", "pod", klog.KObj(pod), "annotation", AnnoGPUs)
	}
	return nil
}

// Permit holds a gang's members until all of its pods are reserved, then lets them all
// bind; a member that waits past the gang timeout is rejected, and with it the others.
func (pl *Plugin) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, node string) (*fwk.Status, time.Duration) {
	st, s := stateOf(cs)
	if s != nil {
		return s, 0
	}
	if st.gang == "" {
		return nil, 0
	}
	if n := pl.view.gangCount(st.gang); n < st.gangN {
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("gpuslice: gang %s: %d of %d placed", st.gang, n, st.gangN)), pl.gangTimeout
	}
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if g, _, _ := gangOf(wp.GetPod()); g == st.gang {
			wp.Allow(Name)
		}
	})
	return nil, 0
}

func (pl *Plugin) rejectGang(gang string, except types.UID, msg string) {
	if pl.handle == nil {
		return
	}
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if g, _, _ := gangOf(wp.GetPod()); g == gang && wp.GetPod().UID != except {
			wp.Reject(Name, msg)
		}
	})
}

// String is for logs.
func (s *cycleState) String() string {
	return strings.TrimSpace(fmt.Sprintf("%+v", s.pr.req))
}
