package plugin

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// The DRA driver whose ResourceSlices and claims the view reads (integrations/k8s/agent).
const (
	DriverName      = "gpu.gpuslice.io"
	CapacityMemory  = "memory"
	CapacityCompute = "compute"
)

// Node labels for a node whose GPUs no ResourceSlice shows (a device-plugin node, a kwok
// node): how many, which model, how much memory each (MiB).
const (
	LabelNodeGPUs      = "gpuslice.io/gpus"
	LabelNodeGPUModel  = "gpuslice.io/gpu-model"
	LabelNodeGPUMemory = "gpuslice.io/gpu-memory-mib"
)

var metav1PatchOptions = metav1.PatchOptions{}

// watch keeps the view up to date from the scheduler's informers: each event changes one
// node, slice, pod or claim in it.
func (pl *Plugin) watch(h fwk.Handle) error {
	f := h.SharedInformerFactory()
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  cache.ResourceEventHandlerFuncs
	}{
		{f.Core().V1().Nodes().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { pl.onNode(o, false) },
			UpdateFunc: func(_, o any) { pl.onNode(o, false) },
			DeleteFunc: func(o any) { pl.onNode(o, true) },
		}},
		{f.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { pl.onPod(o, false) },
			UpdateFunc: func(_, o any) { pl.onPod(o, false) },
			DeleteFunc: func(o any) { pl.onPod(o, true) },
		}},
		{f.Resource().V1().ResourceSlices().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { pl.onSlice(o, false) },
			UpdateFunc: func(_, o any) { pl.onSlice(o, false) },
			DeleteFunc: func(o any) { pl.onSlice(o, true) },
		}},
		{f.Resource().V1().ResourceClaims().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { pl.onClaim(o, false) },
			UpdateFunc: func(_, o any) { pl.onClaim(o, false) },
			DeleteFunc: func(o any) { pl.onClaim(o, true) },
		}},
	}
	for _, x := range handlers {
		if _, err := x.inf.AddEventHandler(x.fn); err != nil {
			return err
		}
	}
	return nil
}

func unwrap(o any) any {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func (pl *Plugin) onNode(o any, deleted bool) {
	n, ok := unwrap(o).(*v1.Node)
	if !ok {
		return
	}
	if deleted {
		pl.view.deleteNode(n.Name)
		return
	}
	a := n.Status.Allocatable
	gpus, _ := strconv.Atoi(n.Labels[LabelNodeGPUs])
	mem, _ := strconv.ParseInt(n.Labels[LabelNodeGPUMemory], 10, 64)
	pl.view.setNode(n.Name, a.Cpu().MilliValue(), a.Memory().Value()>>20, gpus, n.Labels[LabelNodeGPUModel], mem)
}

// onPod counts a pod that is bound to a node and has not ended; an ended or deleted pod
// gives its share back.
func (pl *Plugin) onPod(o any, deleted bool) {
	p, ok := unwrap(o).(*v1.Pod)
	if !ok {
		return
	}
	if deleted || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		pl.view.setHolder(p.UID, nil)
		return
	}
	if p.Spec.NodeName == "" {
		return
	}
	pr, err := requestOf(p)
	if err != nil {
		klog.V(2).InfoS("gpuslice: a bound pod's request is malformed; counted without GPUs", "pod", klog.KObj(p), "err", err)
		pr.req.NumGPU, pr.req.GPUMilli, pr.vramGiB = 0, 0, 0
	}
	h := &holder{node: p.Spec.NodeName, req: pr.req, vramGiB: pr.vramGiB}
	if s, ok := p.Annotations[AnnoGPUs]; ok {
		h.mask, _ = parseGPUs(s)
	} else if pl.view.hasHolder(p.UID) {
		h.mask = pl.view.maskOf(p.UID) // bound by this scheduler, before PreBind's patch shows
	}
	h.gang, _, _ = gangOf(p)
	h.created, h.name, h.gone = pr.created, pr.req.Name, p.DeletionTimestamp != nil
	pl.view.setHolder(p.UID, h)
}

func (pl *Plugin) onSlice(o any, deleted bool) {
	s, ok := unwrap(o).(*resourceapi.ResourceSlice)
	if !ok || s.Spec.Driver != DriverName || s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
		return
	}
	if deleted {
		pl.view.setSlice(*s.Spec.NodeName, s.Name, nil)
		return
	}
	devs := make([]gpuDev, 0, len(s.Spec.Devices))
	for _, d := range s.Spec.Devices {
		g := gpuDev{device: d.Name}
		if a, ok := d.Attributes["index"]; ok && a.IntValue != nil {
			g.index = int(*a.IntValue)
		}
		if a, ok := d.Attributes["model"]; ok && a.StringValue != nil {
			g.model = *a.StringValue
		}
		if c, ok := d.Capacity[CapacityMemory]; ok {
			g.memBytes = c.Value.Value()
		}
		devs = append(devs, g)
	}
	pl.view.setSlice(*s.Spec.NodeName, s.Name, devs)
}

// onClaim counts an allocated claim of the driver: on each device, the larger of the
// memory and the compute it consumes, as GPU-milli.
func (pl *Plugin) onClaim(o any, deleted bool) {
	c, ok := unwrap(o).(*resourceapi.ResourceClaim)
	if !ok {
		return
	}
	if deleted || c.Status.Allocation == nil {
		pl.view.setHolder(c.UID, nil)
		return
	}
	devices := map[string]int64{}
	node := ""
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		node = r.Pool // the agent names its pool after the node
		mem, comp := int64(0), int64(0)
		if q, ok := r.ConsumedCapacity[CapacityMemory]; ok {
			mem = q.Value()
		}
		if q, ok := r.ConsumedCapacity[CapacityCompute]; ok {
			comp = q.Value()
		}
		gpuBytes := pl.view.deviceBytes(node, r.Device)
		if r.ConsumedCapacity == nil {
			mem = gpuBytes // a claim that asks no capacity takes the whole GPU
		}
		devices[r.Device] += int64(shareOfBytes(mem, gpuBytes, comp))
	}
	if len(devices) == 0 {
		pl.view.setHolder(c.UID, nil)
		return
	}
	pl.view.setHolder(c.UID, &holder{node: node, devices: devices})
}
