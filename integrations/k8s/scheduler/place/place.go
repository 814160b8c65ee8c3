// Package place is the C placement core (lib/place-*.c, include/gpuslice/place.h) seen from
// Go: the same code as `gpuslice pack`, compiled into the scheduler by cgo from the
// repository's sources. Each core_*.c file in this directory includes one lib/ file, so cgo
// builds them as separate translation units with no CMake step; TestEveryPlaceSourceIsBuilt
// fails when lib/ gains a place-*.c that has no such file here.
//
// A Cluster is not safe for concurrent use: its owner serializes calls.
package place

/*
#cgo CFLAGS: -std=gnu11 -O2 -D_GNU_SOURCE -I${SRCDIR}/../../../../include -I${SRCDIR}/../../../../lib
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include <gpuslice/place.h>
#include <gpuslice/trace-openb.h>

static const char *gs_err_msg(gs_error_t e) { return e && e->msg ? e->msg : "unknown error"; }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Milli is one whole GPU, in GPU-milli.
const Milli = C.GS_PLACE_MILLI

// MaxGPUs is the most GPUs a node may have.
const MaxGPUs = C.GS_PLACE_MAX_GPUS

// Policy is one of the core's placement policies.
type Policy C.enum_gs_place_policy

// Policies are the names PolicyFromName knows, in the core's order.
var Policies = []string{"first-fit", "best-fit", "gpu-packing", "fgd", "fgd-mem", "fgd-mem-tie"}

// PolicyFromName returns the policy called name, or an error naming it and the known ones.
func PolicyFromName(name string) (Policy, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var p C.enum_gs_place_policy
	if C.gs_place_policy_from_name(cs, &p) != 0 {
		return 0, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Policies, ", "))
	}
	return Policy(p), nil
}

// String is the policy's name.
func (p Policy) String() string { return C.GoString(C.gs_place_policy_name(C.enum_gs_place_policy(p))) }

// FirstFit is the policy that takes the first node that fits, in node order.
var FirstFit = Policy(C.GS_PLACE_FIRST_FIT)

// NodeSpec is one node of a cluster.
type NodeSpec struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	GPUs     int
	Model    string
}

// Request is what one pod asks for: GPUMilli on each of NumGPU GPUs.
type Request struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	NumGPU   int
	GPUMilli int
	GPUSpec  string // allowed models, "A|B"; "" for any
	Queue    string // the scheduler layer's queue (Victims); "" for the default queue
	Priority int    // the scheduler layer's priority (Victims)
}

// Choice is a node and the GPUs of it a request takes.
type Choice struct {
	Node    int
	GPUMask uint32
	Score   int
}

// Cluster is the core's model of a cluster's nodes and what is placed on them.
type Cluster struct {
	c     *C.gs_place_cluster_t
	n     int
	cstrs []*C.char // the node names and models; the core copies what it needs
}

func errOf(e C.gs_error_t) error {
	msg := C.GoString(C.gs_err_msg(e))
	C.gs_error_release(&e)
	return errors.New(msg)
}

// NewCluster is a cluster of these nodes, all idle.
func NewCluster(nodes []NodeSpec) (*Cluster, error) {
	if len(nodes) == 0 {
		return nil, errors.New("a cluster needs at least one node")
	}
	specs := (*[1 << 28]C.struct_gs_place_node_spec)(C.calloc(C.size_t(len(nodes)), C.sizeof_struct_gs_place_node_spec))[:len(nodes):len(nodes)]
	defer C.free(unsafe.Pointer(&specs[0]))
	cl := &Cluster{n: len(nodes)}
	defer cl.freeStrings()
	for i, n := range nodes {
		specs[i].name = cl.cstr(n.Name)
		specs[i].model = cl.cstr(n.Model)
		specs[i].cpu_milli = C.int64_t(n.CPUMilli)
		specs[i].mem_mib = C.int64_t(n.MemMiB)
		specs[i].gpus = C.int(n.GPUs)
	}
	var e C.gs_error_t
	cl.c = C.gs_place_cluster_new(&specs[0], C.size_t(len(nodes)), &e)
	if cl.c == nil {
		return nil, errOf(e)
	}
	runtime.SetFinalizer(cl, (*Cluster).Free)
	return cl, nil
}

func (cl *Cluster) cstr(s string) *C.char {
	p := C.CString(s)
	cl.cstrs = append(cl.cstrs, p)
	return p
}

func (cl *Cluster) freeStrings() {
	for _, p := range cl.cstrs {
		C.free(unsafe.Pointer(p))
	}
	cl.cstrs = nil
}

// Free releases the core's cluster; the Cluster must not be used after.
func (cl *Cluster) Free() {
	if cl.c != nil {
		C.gs_place_cluster_free(cl.c)
		cl.c = nil
	}
}

// Size is the number of nodes.
func (cl *Cluster) Size() int { return cl.n }

// creq is a request in the core's form, its gpu_spec bound to this cluster. Its strings
// are C copies: free them with done.
type creq struct {
	r    C.struct_gs_place_request
	strs []*C.char
}

func (cl *Cluster) bind(r *Request) *creq {
	q := &creq{}
	q.r.cpu_milli = C.int64_t(r.CPUMilli)
	q.r.mem_mib = C.int64_t(r.MemMiB)
	q.r.num_gpu = C.int(r.NumGPU)
	q.r.gpu_milli = C.int(r.GPUMilli)
	q.r.model_mask = C.GS_PLACE_ANY_MODEL
	if r.GPUSpec != "" {
		s := C.CString(r.GPUSpec)
		q.strs = append(q.strs, s)
		q.r.gpu_spec = s
		q.r.model_mask = C.gs_place_model_mask(cl.c, s)
	}
	if r.Queue != "" {
		s := C.CString(r.Queue)
		q.strs = append(q.strs, s)
		q.r.queue = s
	}
	q.r.priority = C.int(r.Priority)
	return q
}

func (q *creq) done() {
	for _, p := range q.strs {
		C.free(unsafe.Pointer(p))
	}
}

// Valid says whether r is a shape the core places: NumGPU 0..MaxGPUs, GPUMilli 1..Milli
// when NumGPU > 0 (0 otherwise), more than one GPU only whole, no negative CPU or memory.
func (r *Request) Valid() error {
	switch {
	case r.CPUMilli < 0 || r.MemMiB < 0:
		return errors.New("negative CPU or memory")
	case r.NumGPU < 0 || r.NumGPU > MaxGPUs:
		return fmt.Errorf("%d GPUs (0 to %d)", r.NumGPU, MaxGPUs)
	case r.NumGPU == 0 && r.GPUMilli != 0:
		return errors.New("a GPU share without a GPU")
	case r.NumGPU > 0 && (r.GPUMilli < 1 || r.GPUMilli > Milli):
		return fmt.Errorf("GPU share %d milli (1 to %d)", r.GPUMilli, Milli)
	case r.NumGPU > 1 && r.GPUMilli != Milli:
		return errors.New("a share of more than one GPU: more than one GPU must be whole GPUs")
	}
	return nil
}

// Fits says whether r fits node now and, when not, why (one line).
func (cl *Cluster) Fits(node int, r *Request) (bool, string) {
	q := cl.bind(r)
	defer q.done()
	var buf [256]C.char
	switch C.gs_place_node_fits(cl.c, C.int(node), &q.r, &buf[0], C.size_t(len(buf))) {
	case 1:
		return true, ""
	case 0:
		return false, C.GoString(&buf[0])
	}
	return false, fmt.Sprintf("node %d out of range", node)
}

// Scorer scores one request on many nodes: Prepare once, then Score each node.
type Scorer struct {
	cl *Cluster
	p  Policy
	q  *creq
}

// Scorer prepares the policy's caches for r. Close it when done.
func (cl *Cluster) Scorer(p Policy, r *Request) *Scorer {
	q := cl.bind(r)
	C.gs_place_node_prepare(cl.c, C.enum_gs_place_policy(p), &q.r)
	return &Scorer{cl: cl, p: p, q: q}
}

// Score is the policy's score of node and the GPUs the request would take there; false
// when it does not fit.
func (s *Scorer) Score(node int) (Choice, bool) {
	var ch C.struct_gs_place_choice
	if C.gs_place_node_score(s.cl.c, C.enum_gs_place_policy(s.p), C.int(node), &s.q.r, &ch) != 1 {
		return Choice{}, false
	}
	return Choice{Node: int(ch.node), GPUMask: uint32(ch.gpu_mask), Score: int(ch.score)}, true
}

// Close frees the scorer's copy of the request.
func (s *Scorer) Close() { s.q.done() }

// Decide is gs_place_decide: the node the policy chooses over the whole cluster.
func (cl *Cluster) Decide(p Policy, r *Request) (Choice, bool) {
	q := cl.bind(r)
	defer q.done()
	var ch C.struct_gs_place_choice
	if C.gs_place_decide(cl.c, C.enum_gs_place_policy(p), &q.r, &ch) != 1 {
		return Choice{}, false
	}
	return Choice{Node: int(ch.node), GPUMask: uint32(ch.gpu_mask), Score: int(ch.score)}, true
}

func cchoice(ch Choice) C.struct_gs_place_choice {
	return C.struct_gs_place_choice{node: C.int(ch.Node), gpu_mask: C.uint32_t(ch.GPUMask), score: C.int(ch.Score)}
}

// Commit takes r's resources on ch's node; ch must come from Decide or a Scorer on the
// cluster as it is.
func (cl *Cluster) Commit(r *Request, ch Choice) {
	q := cl.bind(r)
	defer q.done()
	c := cchoice(ch)
	C.gs_place_commit(cl.c, &q.r, &c)
}

// Take is Commit for work found running: an error when the GPUs of ch do not hold it.
func (cl *Cluster) Take(r *Request, ch Choice) error {
	q := cl.bind(r)
	defer q.done()
	c := cchoice(ch)
	if C.gs_place_node_take(cl.c, &q.r, &c) != 0 {
		return fmt.Errorf("GPUs %#x of node %d do not hold %d milli each", ch.GPUMask, ch.Node, r.GPUMilli)
	}
	return nil
}

// Release gives back what an earlier Commit or Take of r on ch took.
func (cl *Cluster) Release(r *Request, ch Choice) {
	q := cl.bind(r)
	defer q.done()
	c := cchoice(ch)
	C.gs_place_release(cl.c, &q.r, &c)
}

// TieRanks are the nodes' places in the tie order (0 first), as gs_place_decide breaks ties.
func (cl *Cluster) TieRanks() []int {
	out := make([]int, cl.n)
	for i := range out {
		out[i] = int(C.gs_place_node_tie_rank(cl.c, C.int(i)))
	}
	return out
}

// SetTieSeed shuffles the tie order with seed, as `gpuslice pack --seed` does.
func (cl *Cluster) SetTieSeed(seed uint64) { C.gs_place_set_tie_seed(cl.c, C.uint64_t(seed)) }

// SetWorkload gives FGD its target workload: the shapes of reqs, the most popular that
// cover coverage (0..1] of them.
func (cl *Cluster) SetWorkload(reqs []Request, coverage float64) error {
	if len(reqs) == 0 {
		return errors.New("an empty workload")
	}
	cr := (*[1 << 28]C.struct_gs_place_request)(C.calloc(C.size_t(len(reqs)), C.sizeof_struct_gs_place_request))[:len(reqs):len(reqs)]
	defer C.free(unsafe.Pointer(&cr[0]))
	qs := make([]*creq, len(reqs))
	for i := range reqs {
		qs[i] = cl.bind(&reqs[i])
		cr[i] = qs[i].r
	}
	defer func() {
		for _, q := range qs {
			q.done()
		}
	}()
	var e C.gs_error_t
	if C.gs_place_set_workload(cl.c, &cr[0], C.size_t(len(reqs)), C.double(coverage), &e) < 0 {
		return errOf(e)
	}
	return nil
}

// Stats are the cluster's GPU capacity, allocation and fragment, in GPU-milli.
type Stats struct {
	CapacityMilli, AllocatedMilli int64
	FragMilli                     float64
}

// AllocRatio is allocated / capacity, as `gpuslice pack` reports gpu_alloc_ratio.
func (s Stats) AllocRatio() float64 {
	if s.CapacityMilli == 0 {
		return 0
	}
	return float64(s.AllocatedMilli) / float64(s.CapacityMilli)
}

// FragRatio is fragment / idle, as `gpuslice pack` reports frag_ratio.
func (s Stats) FragRatio() float64 {
	idle := s.CapacityMilli - s.AllocatedMilli
	if idle <= 0 {
		return 0
	}
	return s.FragMilli / float64(idle)
}

// Stats reads the cluster's totals.
func (cl *Cluster) Stats() Stats {
	var st C.struct_gs_place_stats
	C.gs_place_stats(cl.c, &st)
	return Stats{int64(st.gpu_milli_capacity), int64(st.gpu_milli_allocated), float64(st.frag_milli)}
}

// GPULeft is the idle GPU-milli of one GPU; -1 when out of range.
func (cl *Cluster) GPULeft(node, gpu int) int {
	return int(C.gs_place_gpu_left(cl.c, C.int(node), C.int(gpu)))
}
