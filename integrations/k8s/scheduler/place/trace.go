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
