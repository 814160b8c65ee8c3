// gpuslice-k8s-replay replays the openb trace on a Kubernetes control plane: the trace's
// GPU nodes as kwok's Node objects (no kubelet: kwok's controller marks them Ready, keeps
// them heartbeating and marks their bound pods Running; nodes.go), with their CPU, memory and
// GPU-milli as capacity, then its pods as Pods, one at a time in `gpuslice pack`'s arrival
// order (gs_place_replay_arrivals, same seed and inflation), each waited for until it is
// bound or found unschedulable (then deleted: the replay drops it, as pack does). At the
// end it reads back where every pod is and computes gpu_alloc_ratio and frag_ratio with the
// core, beside `gpuslice pack`'s own figures for the same policy and seed. A scheduler that
// counts GPUs per node only (the default one) may put pods where no GPU holds them: those
// are reported as per_gpu_misfits and not counted as allocated. --outcomes writes, per pod,
// whether it was bound and where.
//
// --burst N is the scheduler benchmark instead (burst.go): the first N arrivals submitted
// at once, for each scheduler of --schedulers in turn, --rounds times, alternating.
//
// Prints one JSON object. Exit status 0, 1 on failure, 2 on a bad flag.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"gpuslice.io/k8s/scheduler/place"
	"gpuslice.io/k8s/scheduler/plugin"
)

// ResourceGPUMilli is the nodes' GPU capacity as an extended resource, so that the default
// scheduler counts GPUs at all (per node).
const ResourceGPUMilli v1.ResourceName = "gpuslice.io/gpu-milli"

type result struct {
	Scheduler      string  `json:"scheduler"`
	Policy         string  `json:"policy"`
	Seed           uint64  `json:"seed"`
	Inflate        float64 `json:"inflate"`
	Nodes          int     `json:"nodes"`
	Arrivals       int     `json:"arrivals"`
	Bound          int     `json:"pods_bound"`
	Running        int     `json:"pods_running"`
	Unschedulable  int     `json:"pods_unschedulable"`
	PerGPUMisfits  int     `json:"per_gpu_misfits"`
	AllocRatio     float64 `json:"gpu_alloc_ratio"`
	FragRatio      float64 `json:"frag_ratio"`
	PackAllocRatio float64 `json:"pack_gpu_alloc_ratio"`
	PackFragRatio  float64 `json:"pack_frag_ratio"`
	PackPlaced     int     `json:"pack_pods_placed"`
	Seconds        float64 `json:"replay_seconds"`
	PodsPerSecond  float64 `json:"pods_per_second"`
	NodesReadySecs float64 `json:"nodes_ready_seconds,omitempty"`
}

// options are the flags.
type options struct {
	kubeconfig, data, trace, sched, ns, outcomes, schedulers string
	policy                                                   place.Policy
	seed                                                     uint64
	inflate                                                  float64
	limit, nodes, burst, rounds                              int
	createNodes                                              bool
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the control plane")
	flag.StringVar(&o.data, "data", "data/alibaba-openb", "directory of the openb CSVs")
	flag.StringVar(&o.trace, "trace", "default", "pod list: openb_pod_list_<trace>.csv")
	flag.StringVar(&o.sched, "scheduler-name", "gpuslice-scheduler", "the pods' schedulerName")
	policy := flag.String("policy", "fgd", "the policy of pack's reference figures (the scheduler's own is its profile's)")
	flag.Uint64Var(&o.seed, "seed", 42, "arrival order and tie seed, as gpuslice pack --seed")
	flag.Float64Var(&o.inflate, "inflate", 1.3, "arrivals up to this times the GPU capacity")
	flag.IntVar(&o.limit, "limit", 0, "replay only the first N arrivals (0: all)")
	flag.IntVar(&o.nodes, "nodes", 0, "use only the first N nodes of the node list (0: all), as pack on those rows")
	flag.StringVar(&o.ns, "namespace", "replay", "namespace of the pods")
	flag.BoolVar(&o.createNodes, "create-nodes", false, "create the trace's nodes first (as kwok's) and wait until kwok has them Ready")
	flag.StringVar(&o.outcomes, "outcomes", "", "write each pod's outcome here (CSV: pod,trace_pod,bound,node)")
	flag.IntVar(&o.burst, "burst", 0, "the scheduler benchmark: submit the first N arrivals at once (0: the replay)")
	flag.IntVar(&o.rounds, "rounds", 3, "with --burst: rounds of each scheduler")
	flag.StringVar(&o.schedulers, "schedulers", "gpuslice-scheduler,default-scheduler", "with --burst: the schedulers, in turn")
	flag.Parse()
	p, err := place.PolicyFromName(*policy)
	if err == nil && flag.NArg() > 0 {
		err = fmt.Errorf("unexpected %q", flag.Args())
	}
	if err == nil && (o.nodes < 0 || o.limit < 0 || o.burst < 0 || o.rounds < 1) {
		err = fmt.Errorf("--nodes, --limit and --burst must be >= 0, --rounds >= 1")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s-replay: bad flag: %v\n", err)
		os.Exit(2)
	}
	o.policy = p
	if err := run(&o); err != nil {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s-replay: %v\n", err)
		os.Exit(1)
	}
}

// setup is what both the replay and the benchmark start from: the client, the trace's
// nodes and pods, pack's arrival order, and how long kwok took to have the nodes Ready.
type setup struct {
	cs    kubernetes.Interface
	nodes []place.NodeSpec
	pods  []place.Request
	order []int
	ready float64
}

// prepare loads the trace, connects, makes the nodes if asked and computes the arrivals.
func prepare(ctx context.Context, o *options) (*setup, error) {
	var s setup
	var err error
	if s.nodes, err = place.LoadOpenbNodes(o.data + "/openb_node_list_gpu_node.csv"); err != nil {
		return nil, err
	}
	if o.nodes > 0 && o.nodes < len(s.nodes) {
		s.nodes = s.nodes[:o.nodes]
	}
	if s.pods, err = place.LoadOpenbPods(o.data + "/openb_pod_list_" + o.trace + ".csv"); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	if s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if o.createNodes {
		t0 := time.Now()
		if err := makeNodes(ctx, s.cs, s.nodes); err != nil {
			return nil, err
		}
		if err := waitNodesReady(ctx, s.cs, s.nodes, 5*time.Minute); err != nil {
			return nil, err
		}
		s.ready = time.Since(t0).Seconds()
	}
	var capacity int64
	for _, n := range s.nodes {
		capacity += int64(n.GPUs) * place.Milli
	}
	if s.order, err = place.Arrivals(s.pods, capacity, o.inflate, o.seed); err != nil {
		return nil, err
	}
	return &s, nil
}

func makeNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// No controller-manager runs to make the namespace's default service account.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func run(o *options) error {
	ctx := context.Background()
	s, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	if o.burst > 0 {
		return runBurst(ctx, o, s)
	}
	if err := makeNamespace(ctx, s.cs, o.ns); err != nil {
		return err
	}
	order := s.order
	if o.limit > 0 && o.limit < len(order) {
		order = order[:o.limit]
	}
	res := result{Scheduler: o.sched, Policy: o.policy.String(), Seed: o.seed, Inflate: o.inflate, Nodes: len(s.nodes),
		Arrivals: len(order), NodesReadySecs: s.ready}
	var out *csv.Writer
	if o.outcomes != "" {
		f, err := os.Create(o.outcomes)
		if err != nil {
			return err
		}
		defer f.Close()
		out = csv.NewWriter(f)
		_ = out.Write([]string{"pod", "trace_pod", "bound", "node"})
	}
	t0 := time.Now()
	for i, k := range order {
		node, err := submit(ctx, s.cs, o.ns, o.sched, i, s.pods[k])
		if err != nil {
			return fmt.Errorf("pod %d (%s): %w", i, s.pods[k].Name, err)
		}
		if node != "" {
			res.Bound++
		} else {
			res.Unschedulable++
		}
		if out != nil {
			_ = out.Write([]string{podName(i), s.pods[k].Name, strconv.FormatBool(node != ""), node})
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	res.PodsPerSecond = float64(len(order)) / res.Seconds
	if out != nil {
		if out.Flush(); out.Error() != nil {
			return out.Error()
		}
	}
	if res.Running, err = waitRunning(ctx, s.cs, o.ns, res.Bound, 2*time.Minute); err != nil {
		return err
	}
	if err := readBack(ctx, s.cs, o.ns, s.nodes, s.pods, &res); err != nil {
		return err
	}
	ref, err := place.Replay(s.nodes, s.pods, o.policy, o.inflate, o.seed)
	if err != nil {
		return err
	}
	res.PackAllocRatio, res.PackFragRatio, res.PackPlaced = ref.AllocRatio, ref.FragRatio, ref.Placed
	return json.NewEncoder(os.Stdout).Encode(res)
}

func podName(i int) string { return fmt.Sprintf("p%06d", i) }

// replayPod is the trace's pod i as a Pod for the scheduler sched.
func replayPod(ns, sched string, i int, r place.Request) *v1.Pod {
	name := podName(i)
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(r.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(r.MemMiB<<20, resource.BinarySI),
	}
	annos := map[string]string{"gpuslice.io/trace-pod": r.Name}
	if r.NumGPU > 0 {
		req[ResourceGPUMilli] = *resource.NewQuantity(int64(r.NumGPU*r.GPUMilli), resource.DecimalSI)
		annos[plugin.AnnoGPUMilli] = strconv.Itoa(r.GPUMilli)
		annos[plugin.AnnoGPUCount] = strconv.Itoa(r.NumGPU)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annos},
		Spec: v1.PodSpec{SchedulerName: sched, Containers: []v1.Container{{Name: "c", Image: "none",
			Resources: v1.ResourceRequirements{Requests: req, Limits: limitsOf(req)}}}},
	}
	if r.GPUSpec != "" {
		annos[plugin.AnnoGPUModel] = r.GPUSpec
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: plugin.LabelNodeGPUModel, Operator: v1.NodeSelectorOpIn, Values: strings.Split(r.GPUSpec, "|")}}}}}}}
	}
	return pod
}

// submit creates the pod and waits until it is bound (its node) or unschedulable ("", and
// deleted).
func submit(ctx context.Context, cs kubernetes.Interface, ns, sched string, i int, r place.Request) (string, error) {
	name := podName(i)
	pod := replayPod(ns, sched, i, r)
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: created.ResourceVersion})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "", fmt.Errorf("watch closed")
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			if p.Spec.NodeName != "" {
				return p.Spec.NodeName, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
					zero := int64(0)
					err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					return "", err
				}
			}
		case <-timeout:
			return "", fmt.Errorf("neither bound nor unschedulable after 60 s")
		}
	}
}

// limitsOf: extended resources must have limits equal to requests.
func limitsOf(req v1.ResourceList) v1.ResourceList {
	if q, ok := req[ResourceGPUMilli]; ok {
		return v1.ResourceList{ResourceGPUMilli: q}
	}
	return nil
}

// readBack places every bound pod in the core's model where the scheduler put it (on the
// GPUs of its gpuslice.io/gpus annotation, else the tightest ones) and reads the totals.
func readBack(ctx context.Context, cs kubernetes.Interface, ns string, nodes []place.NodeSpec, pods []place.Request, res *result) error {
	cl, err := place.NewCluster(nodes)
	if err != nil {
		return err
	}
	defer cl.Free()
	if err := cl.SetWorkload(pods, 0.95); err != nil {
		return err
	}
	index := map[string]int{}
	for i, n := range nodes {
		index[n.Name] = i
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		i, ok := index[p.Spec.NodeName]
		if !ok {
			continue
		}
		r := requestOfReplayPod(&p)
		ch := place.Choice{Node: i}
		if s, ok := p.Annotations[plugin.AnnoGPUs]; ok && r.NumGPU > 0 {
			for _, f := range strings.Split(s, ",") {
				g, _ := strconv.Atoi(f)
				ch.GPUMask |= 1 << g
			}
		} else if r.NumGPU > 0 {
			sc := cl.Scorer(place.FirstFit, &r)
			c, fits := sc.Score(i)
			sc.Close()
			if !fits {
				res.PerGPUMisfits++
				continue
			}
			ch.GPUMask = c.GPUMask
		}
		if err := cl.Take(&r, ch); err != nil {
			res.PerGPUMisfits++
		}
	}
	st := cl.Stats()
	res.AllocRatio, res.FragRatio = st.AllocRatio(), st.FragRatio()
	return nil
}

func requestOfReplayPod(p *v1.Pod) place.Request {
	r := place.Request{Name: p.Name}
	c := p.Spec.Containers[0].Resources.Requests
	r.CPUMilli = c.Cpu().MilliValue()
	r.MemMiB = c.Memory().Value() >> 20
	r.GPUMilli, _ = strconv.Atoi(p.Annotations[plugin.AnnoGPUMilli])
	r.NumGPU, _ = strconv.Atoi(p.Annotations[plugin.AnnoGPUCount])
	r.GPUSpec = p.Annotations[plugin.AnnoGPUModel]
	return r
}
