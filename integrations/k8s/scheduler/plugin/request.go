package plugin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"gpuslice.io/k8s/scheduler/place"
)

// What a pod asks of the gpuslice scheduler, in its annotations (docs/kubernetes.md, "The
// gpuslice scheduler"):
const (
	// AnnoGPUMilli is the share of each GPU, 1 to 1000 (1000: the whole GPU).
	AnnoGPUMilli = "gpuslice.io/gpu-milli"
	// AnnoGPUCount is how many GPUs get that share; default 1. More than one must be whole.
	AnnoGPUCount = "gpuslice.io/gpu-count"
	// AnnoGPUModel restricts the GPU models, "A|B", as the openb trace's gpu_spec.
	AnnoGPUModel = "gpuslice.io/gpu-model"
	// AnnoGPUs is written by the scheduler before binding: the GPUs it chose, "0,3".
	AnnoGPUs = "gpuslice.io/gpus"
	// ResourceVRAM is the device plugin's resource: GiB of one GPU's memory.
	ResourceVRAM v1.ResourceName = "gpuslice.io/vram"
	// LabelQueue is the pod's queue; without it, its namespace's name.
	LabelQueue = "gpuslice.io/queue"
)

// queueOf is the pod's queue: its label, else its namespace.
func queueOf(pod *v1.Pod) string {
	if q := pod.Labels[LabelQueue]; q != "" {
		return q
	}
	return pod.Namespace
}

// podRequest is the pod's request in the core's terms. vramGiB is set for a device-plugin
// pod, whose share depends on the GPU's memory (see shareOfVRAM).
type podRequest struct {
	req     place.Request
	vramGiB int64
	created time.Time // the pod's creation: its admission order in its queue
}

// requestOf reads what pod asks for: CPU and memory from its containers (as the scheduler
// counts them), a GPU share from its annotations or the device plugin's resource. An error
// names the bad annotation.
func requestOf(pod *v1.Pod) (podRequest, error) {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var pr podRequest
	pr.req.Name = pod.Namespace + "/" + pod.Name
	pr.req.CPUMilli = reqs.Cpu().MilliValue()
	pr.req.MemMiB = reqs.Memory().Value() >> 20
	pr.req.Queue = queueOf(pod)
	if pod.Spec.Priority != nil {
		pr.req.Priority = int(*pod.Spec.Priority)
	}
	pr.created = pod.CreationTimestamp.Time
	a := pod.Annotations
	if s, ok := a[AnnoGPUMilli]; ok {
		milli, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || milli < 1 || milli > place.Milli {
			return pr, fmt.Errorf("annotation %s=%q: not 1 to %d", AnnoGPUMilli, s, place.Milli)
		}
		count := 1
		if c, ok := a[AnnoGPUCount]; ok {
			count, err = strconv.Atoi(strings.TrimSpace(c))
			if err != nil || count < 1 || count > place.MaxGPUs {
				return pr, fmt.Errorf("annotation %s=%q: not 1 to %d", AnnoGPUCount, c, place.MaxGPUs)
			}
		}
		pr.req.NumGPU, pr.req.GPUMilli = count, milli
	} else if _, ok := a[AnnoGPUCount]; ok {
		return pr, fmt.Errorf("annotation %s without %s", AnnoGPUCount, AnnoGPUMilli)
	}
	if q, ok := reqs[ResourceVRAM]; ok && !q.IsZero() {
		if pr.req.NumGPU > 0 {
			return pr, fmt.Errorf("both %s and resource %s", AnnoGPUMilli, ResourceVRAM)
		}
		pr.vramGiB = q.Value()
		pr.req.NumGPU, pr.req.GPUMilli = 1, 1 // the share is set per cluster by shareOfVRAM
	}
	pr.req.GPUSpec = a[AnnoGPUModel]
	if err := pr.req.Valid(); err != nil {
		return pr, fmt.Errorf("pod's GPU request: %w", err)
	}
	return pr, nil
}

// shareOfVRAM is the GPU-milli that gib GiB take of a GPU of gpuMiB MiB, rounded up; more
// than one GPU's worth is 1001 (never fits).
func shareOfVRAM(gib, gpuMiB int64) int {
	if gpuMiB <= 0 {
		return place.Milli + 1
	}
	m := (gib*1024*place.Milli + gpuMiB - 1) / gpuMiB
	if m > place.Milli {
		return place.Milli + 1
	}
	if m < 1 {
		m = 1
	}
	return int(m)
}

// shareOfBytes is the GPU-milli that a claim consuming memBytes and computePct of a GPU
// with gpuBytes holds: the larger of the two, rounded up.
func shareOfBytes(memBytes, gpuBytes, computePct int64) int {
	m := int64(0)
	if gpuBytes > 0 {
		m = (memBytes*place.Milli + gpuBytes - 1) / gpuBytes
	}
	if c := computePct * 10; c > m {
		m = c
	}
	if m > place.Milli {
		m = place.Milli
	}
	return int(m)
}

// parseGPUs reads the scheduler's own AnnoGPUs ("0,3") back into a mask.
func parseGPUs(s string) (uint32, error) {
	var mask uint32
	for _, f := range strings.Split(s, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || g < 0 || g >= place.MaxGPUs {
			return 0, fmt.Errorf("annotation %s=%q: not a list of GPU indices", AnnoGPUs, s)
		}
		mask |= 1 << g
	}
	return mask, nil
}

// formatGPUs is the mask as AnnoGPUs writes it.
func formatGPUs(mask uint32) string {
	var b strings.Builder
	for g := 0; g < place.MaxGPUs; g++ {
		if mask&(1<<g) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(g))
		}
	}
	return b.String()
}
