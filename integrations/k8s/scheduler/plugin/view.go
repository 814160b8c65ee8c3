package plugin

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"gpuslice.io/k8s/scheduler/place"
)

// gpuDev is one GPU of a node as a ResourceSlice of gpu.gpuslice.io shows it.
type gpuDev struct {
	device   string // "gpu-0"
	index    int
	model    string
	memBytes int64
}

// nodeState is what the view knows of one node: its allocatable CPU and memory, and its
// GPUs from node labels (kwok, a device-plugin node) or from its ResourceSlices (DRA).
type nodeState struct {
	cpuMilli, memMiB int64
	labelGPUs        int
	labelModel       string
	labelGPUMiB      int64
	slices           map[string][]gpuDev // by ResourceSlice name
}

// gpus is the node's GPU layout: the DRA devices in index order when it has any, else its
// labels. devPos maps a device name to its position.
func (n *nodeState) gpus() (count int, model string, gpuMiB int64, devPos map[string]int) {
	var devs []gpuDev
	for _, s := range n.slices {
		devs = append(devs, s...)
	}
	if len(devs) == 0 {
		return n.labelGPUs, n.labelModel, n.labelGPUMiB, nil
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].index < devs[j].index })
	devPos = make(map[string]int, len(devs))
	for i, d := range devs {
		devPos[d.device] = i
	}
	if len(devs) > place.MaxGPUs {
		devs = devs[:place.MaxGPUs]
	}
	return len(devs), devs[0].model, devs[0].memBytes >> 20, devPos
}

// holder is something that holds resources on a node: a pod (bound, or assumed by
// Reserve) or an allocated DRA claim.
type holder struct {
	node    string
	req     place.Request
	vramGiB int64            // a device-plugin pod: the share follows the node's GPU memory
	mask    uint32           // 0 for a GPU pod not placed by this scheduler: the tightest GPUs
	devices map[string]int64 // a claim: the share (milli) per device name
	gang    string           // namespace/name of the pod's gang, or ""
	created time.Time        // a pod's creation: its admission order in its queue
	name    string           // a pod's namespace/name
	gone    bool             // a pod being deleted: it holds its share until it is gone
}

// view is the scheduler's incremental model of the cluster: the core's Cluster over the
// known nodes, with every holder taken on it. Informer events add and remove holders one
// by one (a commit or release in the core); a change to the nodes' layout rebuilds the
// Cluster from the holders at the next question, which no pod event does.
type view struct {
	mu       sync.Mutex
	policy   place.Policy
	tieSeed  uint64
	workload []place.Request
	coverage float64

	nodes   map[string]*nodeState
	holders map[types.UID]*holder

	cl       *place.Cluster // nil: to rebuild
	index    map[string]int // node name -> position in cl
	names    []string
	ranks    []int
	gpuMiB   []int64                    // per position: one GPU's memory, for vram shares
	devPos   []map[string]int           // per position: DRA device -> GPU
	taken    map[types.UID]place.Choice // what each holder took in cl
	takenReq map[types.UID]place.Request
	rebuilds int
}

func newView(p place.Policy, seed uint64, workload []place.Request, coverage float64) *view {
	return &view{policy: p, tieSeed: seed, workload: workload, coverage: coverage,
		nodes: map[string]*nodeState{}, holders: map[types.UID]*holder{}}
}

// setNode records a node's capacity; a change to it marks the Cluster for a rebuild.
func (v *view) setNode(name string, cpuMilli, memMiB int64, gpus int, model string, gpuMiB int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[name]
	if n == nil {
		n = &nodeState{slices: map[string][]gpuDev{}}
		v.nodes[name] = n
	} else if n.cpuMilli == cpuMilli && n.memMiB == memMiB && n.labelGPUs == gpus &&
		n.labelModel == model && n.labelGPUMiB == gpuMiB {
		return
	}
	n.cpuMilli, n.memMiB, n.labelGPUs, n.labelModel, n.labelGPUMiB = cpuMilli, memMiB, gpus, model, gpuMiB
	v.cl = nil
}

func (v *view) deleteNode(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.nodes[name]; ok {
		delete(v.nodes, name)
		v.cl = nil
	}
}

// setSlice records the GPUs one ResourceSlice publishes for node (nil devs: the slice is gone).
func (v *view) setSlice(node, slice string, devs []gpuDev) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[node]
	if n == nil {
		n = &nodeState{slices: map[string][]gpuDev{}}
		v.nodes[node] = n
	}
	if devs == nil {
		delete(n.slices, slice)
	} else {
		n.slices[slice] = devs
	}
	v.cl = nil
}

// choiceFor is where h sits in cl: its node's position and GPUs, with its request as the
// core counts it there. ok is false when its node is unknown.
func (v *view) choiceFor(h *holder) (place.Request, place.Choice, bool) {
	i, ok := v.index[h.node]
	if !ok {
		return place.Request{}, place.Choice{}, false
	}
	r := h.req
	if h.vramGiB > 0 {
		r.GPUMilli = shareOfVRAM(h.vramGiB, v.gpuMiB[i])
	}
	return r, place.Choice{Node: i, GPUMask: h.mask}, true
}

// take puts h on cl (a claim: its share on each of its devices as one-GPU requests).
func (v *view) take(uid types.UID, h *holder) {
	r, ch, ok := v.choiceFor(h)
	if !ok {
		return
	}
	if h.devices != nil {
		v.takeClaim(uid, h, ch.Node)
		return
	}
	if r.NumGPU > 0 && ch.GPUMask == 0 {
		s := v.cl.Scorer(place.FirstFit, &r)
		c, fits := s.Score(ch.Node)
		s.Close()
		if !fits {
			klog.V(2).InfoS("gpuslice: a bound pod does not fit its node's GPUs in the model", "pod", r.Name, "node", h.node)
			return
		}
		ch.GPUMask = c.GPUMask
	}
	if err := v.cl.Take(&r, ch); err != nil {
		klog.V(2).InfoS("gpuslice: not counted", "pod", r.Name, "node", h.node, "err", err)
		return
	}
	v.taken[uid] = ch
	v.takenReq[uid] = r
}

// takeClaim takes a claim's share on each GPU; its record is the sum, one GPU at a time.
func (v *view) takeClaim(uid types.UID, h *holder, node int) {
	var mask uint32
	for dev, milli := range h.devices {
		g, ok := v.devPos[node][dev]
		if !ok || milli <= 0 {
			continue
		}
		r := place.Request{Name: "claim", NumGPU: 1, GPUMilli: int(milli)}
		if err := v.cl.Take(&r, place.Choice{Node: node, GPUMask: 1 << g}); err == nil {
			mask |= 1 << g
		}
	}
	v.taken[uid] = place.Choice{Node: node, GPUMask: mask}
}

func (v *view) release(uid types.UID, h *holder) {
	ch, ok := v.taken[uid]
	if !ok {
		return
	}
	delete(v.taken, uid)
	if h.devices != nil {
		for dev, milli := range h.devices {
			g, ok := v.devPos[ch.Node][dev]
			if ok && ch.GPUMask&(1<<g) != 0 {
				r := place.Request{Name: "claim", NumGPU: 1, GPUMilli: int(milli)}
				v.cl.Release(&r, place.Choice{Node: ch.Node, GPUMask: 1 << g})
			}
		}
		return
	}
	r := v.takenReq[uid]
	delete(v.takenReq, uid)
	v.cl.Release(&r, ch)
}

// setHolder adds or replaces what uid holds; nil removes it.
func (v *view) setHolder(uid types.UID, h *holder) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setHolderLocked(uid, h)
}

func (v *view) setHolderLocked(uid types.UID, h *holder) {
	old := v.holders[uid]
	if old != nil && h != nil && old.node == h.node && old.mask == h.mask && old.devices == nil && h.devices == nil {
		old.gone = h.gone
		return // a pod's update that moves nothing
	}
	if old != nil && v.cl != nil {
		v.release(uid, old)
	}
	if h == nil {
		delete(v.holders, uid)
		return
	}
	v.holders[uid] = h
	if v.cl != nil {
		v.take(uid, h)
	}
}

func (v *view) hasHolder(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.holders[uid] != nil
}

// ensure rebuilds cl when the nodes changed since it was built. Holders are taken in a
// fixed order (pods by node, then name) so that a rebuild gives the same model each time.
func (v *view) ensure() error {
	if v.cl != nil {
		return nil
	}
	names := make([]string, 0, len(v.nodes))
	for name := range v.nodes {
		names = append(names, name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no nodes")
	}
	sort.Strings(names)
	specs := make([]place.NodeSpec, len(names))
	v.gpuMiB = make([]int64, len(names))
	v.devPos = make([]map[string]int, len(names))
	v.index = make(map[string]int, len(names))
	for i, name := range names {
		n := v.nodes[name]
		count, model, gpuMiB, devPos := n.gpus()
		specs[i] = place.NodeSpec{Name: name, CPUMilli: n.cpuMilli, MemMiB: n.memMiB, GPUs: count, Model: model}
		v.gpuMiB[i], v.devPos[i], v.index[name] = gpuMiB, devPos, i
	}
	cl, err := place.NewCluster(specs)
	if err != nil {
		return err
	}
	cl.SetTieSeed(v.tieSeed)
	if workload := v.workloadLocked(); len(workload) > 0 {
		if err := cl.SetWorkload(workload, v.coverage); err != nil {
			cl.Free()
			return fmt.Errorf("workload: %w", err)
		}
	}
	if v.cl != nil {
		v.cl.Free()
	}
	v.cl, v.names, v.ranks = cl, names, cl.TieRanks()
	v.taken = map[types.UID]place.Choice{}
	v.takenReq = map[types.UID]place.Request{}
	uids := make([]types.UID, 0, len(v.holders))
	for uid := range v.holders {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool {
		a, b := v.holders[uids[i]], v.holders[uids[j]]
		if a.node != b.node {
			return a.node < b.node
		}
		return uids[i] < uids[j]
	})
	for _, uid := range uids {
		v.take(uid, v.holders[uid])
	}
	v.rebuilds++
	return nil
}

// workloadLocked is FGD's target workload: the profile's, else the pods seen holding
// resources when the Cluster is built.
func (v *view) workloadLocked() []place.Request {
	if len(v.workload) > 0 {
		return v.workload
	}
	var seen []place.Request
	for _, h := range v.holders {
		if h.devices == nil && h.vramGiB == 0 {
			seen = append(seen, h.req)
		}
	}
	return seen
}

// requestOn is pr as the core counts it on node i.
func (v *view) requestOn(pr podRequest, i int) place.Request {
	r := pr.req
	if pr.vramGiB > 0 {
		r.GPUMilli = shareOfVRAM(pr.vramGiB, v.gpuMiB[i])
	}
	return r
}

// fits answers Filter: whether pr fits node now, and why not.
func (v *view) fits(node string, pr podRequest) (bool, string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ensure(); err != nil {
		return false, err.Error()
	}
	i, ok := v.index[node]
	if !ok {
		return false, "node not known to the gpuslice scheduler yet"
	}
	r := v.requestOn(pr, i)
	return v.cl.Fits(i, &r)
}

// decide is the core's own choice over the whole cluster (gs_place_decide), for the
// Score of the node the core would pick. "" when none fits.
func (v *view) decide(pr podRequest) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ensure() != nil || pr.vramGiB > 0 {
		return "" // a vram share differs per node: no one request for the whole cluster
	}
	ch, ok := v.cl.Decide(v.policy, &pr.req)
	if !ok {
		return ""
	}
	return v.names[ch.Node]
}

// score is the policy's score of node for pr, made comparable across nodes: for first-fit
// the earlier node scores higher; ties go by the tie order, as gs_place_decide breaks them.
// ok is false when pr does not fit.
func (v *view) score(node string, pr podRequest) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ensure() != nil {
		return 0, false
	}
	i, ok := v.index[node]
	if !ok {
		return 0, false
	}
	r := v.requestOn(pr, i)
	s := v.cl.Scorer(v.policy, &r)
	ch, fits := s.Score(i)
	s.Close()
	if !fits {
		return 0, false
	}
	n := int64(len(v.names))
	if v.policy == place.FirstFit {
		return n - int64(i), true
	}
	return int64(ch.Score)*n + (n - int64(v.ranks[i])), true
}

// assume takes pr on node for the pod uid (Reserve): the GPUs the policy chooses there.
// Returns the GPUs, or an error when it no longer fits.
func (v *view) assume(uid types.UID, node string, pr podRequest, gang string) (uint32, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ensure(); err != nil {
		return 0, err
	}
	i, ok := v.index[node]
	if !ok {
		return 0, fmt.Errorf("node %s not known to the gpuslice scheduler", node)
	}
	r := v.requestOn(pr, i)
	s := v.cl.Scorer(v.policy, &r)
	ch, fits := s.Score(i)
	s.Close()
	if !fits {
		_, why := v.cl.Fits(i, &r)
		return 0, fmt.Errorf("no longer fits node %s: %s", node, why)
	}
	v.setHolderLocked(uid, &holder{node: node, req: pr.req, vramGiB: pr.vramGiB, mask: ch.GPUMask, gang: gang,
		created: pr.created, name: pr.req.Name})
	return ch.GPUMask, nil
}

// gangCount is how many pods of gang hold resources (bound or assumed).
func (v *view) gangCount(gang string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, h := range v.holders {
		if h.gang == gang {
			n++
		}
	}
	return n
}

// stats are the core's totals over the cluster as the view has it.
func (v *view) stats() (place.Stats, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ensure(); err != nil {
		return place.Stats{}, err
	}
	return v.cl.Stats(), nil
}

// maskOf is the GPUs the holder uid took, 0 when none.
func (v *view) maskOf(uid types.UID) uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if h := v.holders[uid]; h != nil {
		return h.mask
	}
	return 0
}

// deviceBytes is the memory of a DRA device of node; 0 when unknown.
func (v *view) deviceBytes(node, device string) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n := v.nodes[node]; n != nil {
		for _, s := range n.slices {
			for _, d := range s {
				if d.device == device {
					return d.memBytes
				}
			}
		}
	}
	return 0
}
