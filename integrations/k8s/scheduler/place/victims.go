package place

/*
#include <stdlib.h>
#include <gpuslice/place-queue.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// QueueSpec is one queue of the scheduler layer (include/gpuslice/place-queue.h): its
// guaranteed GPU-milli and its share of idle capacity beyond it.
type QueueSpec struct {
	Name       string
	QuotaMilli int64
	Weight     int
}

// Running is a pod taken on the cluster: its request (with Queue and Priority) and where.
type Running struct {
	Req    Request
	Choice Choice
}

// Victims is gs_place_victims: which of pods (all taken on cl, in the order they were
// admitted) to evict so that r fits, by the core's quota and preemption rules, searching
// the nodes i with allowed[i] (nil: all). It returns the victims' indices into pods and
// their node, or none with the reason (r over quota, or no node can be freed for it). The
// cluster is as it was on return. An error is a bad queue list.
func (cl *Cluster) Victims(queues []QueueSpec, pods []Running, r *Request, allowed []bool) ([]int, int, string, error) {
	cq := make([]C.struct_gs_place_queue_spec, len(queues)+1)
	var strs []*C.char
	defer func() {
		for _, p := range strs {
			C.free(unsafe.Pointer(p))
		}
	}()
	for i, q := range queues {
		s := C.CString(q.Name)
		strs = append(strs, s)
		cq[i].name = s
		cq[i].quota_milli = C.int64_t(q.QuotaMilli)
		cq[i].weight = C.int(q.Weight)
	}
	cp := make([]C.struct_gs_place_running, len(pods)+1)
	binds := make([]*creq, 0, len(pods)+1)
	defer func() {
		for _, q := range binds {
			q.done()
		}
	}()
	for i := range pods {
		q := cl.bind(&pods[i].Req)
		binds = append(binds, q)
		cp[i].r = q.r
		cp[i].choice = cchoice(pods[i].Choice)
	}
	rq := cl.bind(r)
	binds = append(binds, rq)
	var callow *C.bool
	if allowed != nil {
		if len(allowed) != cl.n {
			return nil, -1, "", fmt.Errorf("allowed has %d nodes, the cluster %d", len(allowed), cl.n)
		}
		ca := make([]C.bool, cl.n+1)
		for i, a := range allowed {
			ca[i] = C.bool(a)
		}
		callow = &ca[0]
	}
	var victims [C.GS_PLACE_VICTIMS_MAX]C.size_t
	var node C.int
	var reason [C.GS_PLACE_REASON_MAX]C.char
	var e C.gs_error_t
	n := C.gs_place_victims(cl.c, &cq[0], C.size_t(len(queues)), &cp[0], C.size_t(len(pods)), &rq.r,
		callow, &victims[0], &node, &reason[0], C.size_t(len(reason)), &e)
	if n < 0 {
		return nil, -1, "", errOf(e)
	}
	out := make([]int, int(n))
	for k := range out {
		out[k] = int(victims[k])
	}
	if n == 0 {
		node = -1
	}
	return out, int(node), C.GoString(&reason[0]), nil
}
