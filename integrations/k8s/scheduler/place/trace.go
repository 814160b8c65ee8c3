package place

/*
#include <stdlib.h>
#include <gpuslice/trace-openb.h>

static const char *gs_trace_err_msg(gs_error_t e) { return e && e->msg ? e->msg : "unknown error"; }
*/
import "C"

import (
	"errors"
	"unsafe"
)

func traceErr(e C.gs_error_t) error {
	msg := C.GoString(C.gs_trace_err_msg(e))
	C.gs_error_release(&e)
	return errors.New(msg)
}

// LoadOpenbNodes reads an openb node list (openb_node_list_gpu_node.csv) with the core's
// reader, the one `gpuslice pack` uses.
func LoadOpenbNodes(path string) ([]NodeSpec, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var l C.struct_gs_openb_nodes
	var e C.gs_error_t
	if C.gs_openb_load_nodes(cp, &l, &e) < 0 {
		return nil, traceErr(e)
	}
	defer C.gs_openb_nodes_release(&l)
	specs := unsafe.Slice(l.nodes, l.n)
	out := make([]NodeSpec, len(specs))
	for i, s := range specs {
		out[i] = NodeSpec{Name: C.GoString(s.name), CPUMilli: int64(s.cpu_milli),
			MemMiB: int64(s.mem_mib), GPUs: int(s.gpus), Model: C.GoString(s.model)}
	}
	return out, nil
}

// LoadOpenbPods reads an openb pod list (openb_pod_list_default.csv) with the core's reader.
func LoadOpenbPods(path string) ([]Request, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var l C.struct_gs_openb_pods
	var e C.gs_error_t
	if C.gs_openb_load_pods(cp, &l, &e) < 0 {
		return nil, traceErr(e)
	}
	defer C.gs_openb_pods_release(&l)
	pods := unsafe.Slice(l.pods, l.n)
	out := make([]Request, len(pods))
	for i, p := range pods {
		out[i] = Request{Name: C.GoString(p.name), CPUMilli: int64(p.cpu_milli),
			MemMiB: int64(p.mem_mib), NumGPU: int(p.num_gpu), GPUMilli: int(p.gpu_milli),
			GPUSpec: C.GoString(p.gpu_spec)}
	}
	return out, nil
}

// Arrivals is the order `gpuslice pack` replays pods in (gs_place_replay_arrivals): indices
// into pods, for a cluster of capacityMilli GPU-milli, with inflate and seed.
func Arrivals(pods []Request, capacityMilli int64, inflate float64, seed uint64) ([]int, error) {
	cl := &Cluster{}
	defer cl.freeStrings()
	cr := make([]C.struct_gs_place_request, len(pods))
	if len(pods) == 0 {
		return nil, errors.New("no pods to replay")
	}
	cpods := (*[1 << 28]C.struct_gs_place_request)(C.calloc(C.size_t(len(pods)), C.sizeof_struct_gs_place_request))[:len(pods):len(pods)]
	defer C.free(unsafe.Pointer(&cpods[0]))
	for i, p := range pods {
		cr[i].name = cl.cstr(p.Name)
		cr[i].num_gpu = C.int(p.NumGPU)
		cr[i].gpu_milli = C.int(p.GPUMilli)
		cpods[i] = cr[i]
	}
	var order *C.size_t
	var n C.size_t
	var e C.gs_error_t
	if C.gs_place_replay_arrivals(&cpods[0], C.size_t(len(pods)), C.int64_t(capacityMilli), C.double(inflate),
		C.uint64_t(seed), &order, &n, &e) < 0 {
		return nil, traceErr(e)
	}
	defer C.free(unsafe.Pointer(order))
	out := make([]int, n)
	for i, k := range unsafe.Slice(order, n) {
		out[i] = int(k)
	}
	return out, nil
}

// ReplayResult is gs_place_replay's answer.
type ReplayResult struct {
	AllocRatio, FragRatio float64
	Placed, Failed        int
}

// Replay is `gpuslice pack`'s replay (gs_place_replay), for reference figures.
func Replay(nodes []NodeSpec, pods []Request, p Policy, inflate float64, seed uint64) (ReplayResult, error) {
	cl := &Cluster{}
	defer cl.freeStrings()
	cn := (*[1 << 28]C.struct_gs_place_node_spec)(C.calloc(C.size_t(len(nodes)), C.sizeof_struct_gs_place_node_spec))[:len(nodes):len(nodes)]
	defer C.free(unsafe.Pointer(&cn[0]))
	for i, n := range nodes {
		cn[i] = C.struct_gs_place_node_spec{name: cl.cstr(n.Name), cpu_milli: C.int64_t(n.CPUMilli),
			mem_mib: C.int64_t(n.MemMiB), gpus: C.int(n.GPUs), model: cl.cstr(n.Model)}
	}
	cp := (*[1 << 28]C.struct_gs_place_request)(C.calloc(C.size_t(len(pods)), C.sizeof_struct_gs_place_request))[:len(pods):len(pods)]
	defer C.free(unsafe.Pointer(&cp[0]))
	for i, r := range pods {
		cp[i] = C.struct_gs_place_request{name: cl.cstr(r.Name), cpu_milli: C.int64_t(r.CPUMilli),
			mem_mib: C.int64_t(r.MemMiB), num_gpu: C.int(r.NumGPU), gpu_milli: C.int(r.GPUMilli),
			gpu_spec: cl.cstr(r.GPUSpec)}
	}
	opts := C.struct_gs_place_replay_opts{policy: C.enum_gs_place_policy(p), inflate: C.double(inflate), seed: C.uint64_t(seed)}
	var res C.struct_gs_place_replay_result
	var e C.gs_error_t
	if C.gs_place_replay(&cn[0], C.size_t(len(nodes)), &cp[0], C.size_t(len(pods)), &opts, &res, &e) < 0 {
		return ReplayResult{}, traceErr(e)
	}
	return ReplayResult{float64(res.gpu_alloc_ratio), float64(res.frag_ratio), int(res.pods_placed), int(res.pods_failed)}, nil
}
