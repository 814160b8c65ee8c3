package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpuslice.io/k8s/scheduler/place"
)

// Queues and preemption: a pod that fits nowhere and is in quota for its queue evicts
// over-quota pods of other queues (of its own only at a lower priority), chosen by the
// core (gs_place_victims, the rules of include/gpuslice/place-queue.h) over the view.

// victim is a pod the core chose to evict.
type victim struct {
	uid   types.UID
	name  string // namespace/name
	queue string
	gone  bool // already being deleted
}

// victims asks the core which pods to evict, on which node, for pr to fit; none, with the
// reason, when pr is over quota or no node can be freed for it. allowed names the nodes
// the other filters did not rule out (nil: all).
func (v *view) victims(queues []place.QueueSpec, pr podRequest, allowed func(string) bool) ([]victim, string, string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ensure(); err != nil {
		return nil, "", "", err
	}
	if pr.vramGiB > 0 {
		return nil, "", "a device-plugin (vram) pod does not preempt: its share differs per node", nil
	}
	uids := make([]types.UID, 0, len(v.taken))
	for uid := range v.taken {
		if h := v.holders[uid]; h != nil && h.devices == nil {
			uids = append(uids, uid)
		}
	}
	// Admission order: creation time, then name, so that each pod's standing in its queue
	// is the same at every question.
	sort.Slice(uids, func(i, j int) bool {
		a, b := v.holders[uids[i]], v.holders[uids[j]]
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return a.name < b.name
	})
	pods := make([]place.Running, len(uids))
	for i, uid := range uids {
		pods[i] = place.Running{Req: v.takenReq[uid], Choice: v.taken[uid]}
	}
	var mask []bool
	if allowed != nil {
		mask = make([]bool, len(v.names))
		for i, n := range v.names {
			mask[i] = allowed(n)
		}
	}
	idx, node, why, err := v.cl.Victims(queues, pods, &pr.req, mask)
	if err != nil || len(idx) == 0 {
		return nil, "", why, err
	}
	out := make([]victim, len(idx))
	for k, i := range idx {
		h := v.holders[uids[i]]
		out[k] = victim{uid: uids[i], name: h.name, queue: h.req.Queue, gone: h.gone}
	}
	return out, v.names[node], why, nil
}

// PostFilter preempts for an in-quota pod that fits nowhere: it evicts the victims the
// core chooses and nominates their node. An over-quota pod never preempts, and in-quota
// pods are never victims.
func (pl *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	st, s := stateOf(cs)
	if s != nil {
		return nil, s
	}
	allowed := func(node string) bool {
		return m == nil || m.Get(node).Code() != fwk.UnschedulableAndUnresolvable
	}
	vs, node, why, err := pl.view.victims(pl.queues, st.pr, allowed)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("gpuslice: preemption: %w", err))
	}
	if len(vs) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpuslice: no preemption: "+why)
	}
	names := make([]string, len(vs))
	for i, vc := range vs {
		names[i] = vc.name
		if err := pl.evict(ctx, pod, vc, node); err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("gpuslice: preempting %s: %w", vc.name, err))
		}
	}
	klog.FromContext(ctx).Info("gpuslice: preempted", "pod", klog.KObj(pod), "node", node, "victims", names, "why", why)
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}},
		fwk.NewStatus(fwk.Success, fmt.Sprintf("gpuslice: %s: preempting %s on %s", why, strings.Join(names, ", "), node))
}

// preemptionMessage says why vc goes, on its DisruptionTarget condition and its event.
func preemptionMessage(pod *v1.Pod, vc victim, node string) string {
	return fmt.Sprintf("gpuslice: preempted on %s by %s/%s, in quota for queue %s; %s was over quota for queue %s",
		node, pod.Namespace, pod.Name, queueOf(pod), vc.name, vc.queue)
}

// evict marks vc with a DisruptionTarget condition saying why, records an event, and
// deletes it. A victim already being deleted is left to finish.
func (pl *Plugin) evict(ctx context.Context, pod *v1.Pod, vc victim, node string) error {
	if vc.gone || pl.handle == nil {
		return nil
	}
	ns, name, _ := strings.Cut(vc.name, "/")
	msg := preemptionMessage(pod, vc, node)
	pods := pl.handle.ClientSet().CoreV1().Pods(ns)
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonPreemptionByScheduler, Message: msg, LastTransitionTime: metav1.Now()}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if _, err := pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "gpuslice: the victim's DisruptionTarget condition", "pod", vc.name)
	}
	if victimPod, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil {
		pl.handle.EventRecorder().Eventf(victimPod, pod, v1.EventTypeNormal, "Preempted", "Preempting", msg)
	}
	err = pods.Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(vc.uid))})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
