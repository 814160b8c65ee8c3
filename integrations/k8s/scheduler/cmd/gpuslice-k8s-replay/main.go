// gpuslice-k8s-replay replays the openb trace on a Kubernetes control plane: the trace's
// GPU nodes as Node objects (no kubelet: plain objects, Ready, with their CPU, memory and
// GPU-milli as capacity), then its pods as Pods, one at a time in `gpuslice pack`'s arrival
// order (gs_place_replay_arrivals, same seed and inflation), each waited for until it is
// bound or found unschedulable (then deleted: the replay drops it, as pack does). At the
// end it reads back where every pod is and computes gpu_alloc_ratio and frag_ratio with the
// core, beside `gpuslice pack`'s own figures for the same policy and seed. A scheduler that
// counts GPUs per node only (the default one) may put pods where no GPU holds them: those
// are reported as per_gpu_misfits and not counted as allocated.
//
// Prints one JSON object. Exit status 0, 1 on failure, 2 on a bad flag.
package main

import (
	"context"
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
	Unschedulable  int     `json:"pods_unschedulable"`
	PerGPUMisfits  int     `json:"per_gpu_misfits"`
	AllocRatio     float64 `json:"gpu_alloc_ratio"`
	FragRatio      float64 `json:"frag_ratio"`
	PackAllocRatio float64 `json:"pack_gpu_alloc_ratio"`
	PackFragRatio  float64 `json:"pack_frag_ratio"`
	PackPlaced     int     `json:"pack_pods_placed"`
	Seconds        float64 `json:"replay_seconds"`
	PodsPerSecond  float64 `json:"pods_per_second"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the control plane")
	data := flag.String("data", "data/alibaba-openb", "directory of the openb CSVs")
	trace := flag.String("trace", "default", "pod list: openb_pod_list_<trace>.csv")
	sched := flag.String("scheduler-name", "gpuslice-scheduler", "the pods' schedulerName")
	policy := flag.String("policy", "fgd", "the policy of pack's reference figures (the scheduler's own is its profile's)")
	seed := flag.Uint64("seed", 42, "arrival order and tie seed, as gpuslice pack --seed")
	inflate := flag.Float64("inflate", 1.3, "arrivals up to this times the GPU capacity")
	limit := flag.Int("limit", 0, "replay only the first N arrivals (0: all)")
	ns := flag.String("namespace", "replay", "namespace of the pods")
	createNodes := flag.Bool("create-nodes", false, "create the trace's nodes first")
	flag.Parse()
	p, err := place.PolicyFromName(*policy)
	if err != nil || flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s-replay: bad flag: %v\n", firstErr(err, fmt.Errorf("unexpected %q", flag.Args())))
		os.Exit(2)
	}
	if err := run(*kubeconfig, *data, *trace, *sched, p, *seed, *inflate, *limit, *ns, *createNodes); err != nil {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s-replay: %v\n", err)
		os.Exit(1)
	}
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func run(kubeconfig, data, trace, sched string, p place.Policy, seed uint64, inflate float64, limit int, ns string, createNodes bool) error {
	ctx := context.Background()
	nodes, err := place.LoadOpenbNodes(data + "/openb_node_list_gpu_node.csv")
	if err != nil {
		return err
	}
	pods, err := place.LoadOpenbPods(data + "/openb_pod_list_" + trace + ".csv")
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if createNodes {
		if err := makeNodes(ctx, cs, nodes); err != nil {
			return err
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// No controller-manager runs to make the namespace's default service account.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var capacity int64
	for _, n := range nodes {
		capacity += int64(n.GPUs) * place.Milli
	}
	order, err := place.Arrivals(pods, capacity, inflate, seed)
	if err != nil {
		return err
	}
	if limit > 0 && limit < len(order) {
		order = order[:limit]
	}
	res := result{Scheduler: sched, Policy: p.String(), Seed: seed, Inflate: inflate, Nodes: len(nodes), Arrivals: len(order)}
	t0 := time.Now()
	for i, k := range order {
		bound, err := submit(ctx, cs, ns, sched, i, pods[k])
		if err != nil {
			return fmt.Errorf("pod %d (%s): %w", i, pods[k].Name, err)
		}
		if bound {
			res.Bound++
		} else {
			res.Unschedulable++
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	res.PodsPerSecond = float64(len(order)) / res.Seconds
	if err := readBack(ctx, cs, ns, nodes, pods, &res); err != nil {
		return err
	}
	ref, err := place.Replay(nodes, pods, p, inflate, seed)
	if err != nil {
		return err
	}
	res.PackAllocRatio, res.PackFragRatio, res.PackPlaced = ref.AllocRatio, ref.FragRatio, ref.Placed
	return json.NewEncoder(os.Stdout).Encode(res)
}

func makeNodes(ctx context.Context, cs kubernetes.Interface, nodes []place.NodeSpec) error {
	for _, n := range nodes {
		res := v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(n.CPUMilli, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(n.MemMiB<<20, resource.BinarySI),
			v1.ResourcePods:   resource.MustParse("10000"),
			ResourceGPUMilli:  *resource.NewQuantity(int64(n.GPUs)*place.Milli, resource.DecimalSI),
		}
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
				plugin.LabelNodeGPUs: strconv.Itoa(n.GPUs), plugin.LabelNodeGPUModel: n.Model,
				"kubernetes.io/hostname": n.Name, "type": "replay"}},
			Status: v1.NodeStatus{Capacity: res, Allocatable: res,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Replay",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}},
		}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		created.Status = node.Status
		updated, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("node %s status: %w", n.Name, err)
		}
		// The API server taints a new node not-ready; the node lifecycle controller, which
		// does not run here, would lift it once the node is Ready.
		updated.Spec.Taints = nil
		if _, err := cs.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s taints: %w", n.Name, err)
		}
	}
	return nil
}

func podName(i int) string { return fmt.Sprintf("p%06d", i) }

// submit creates the pod and waits until it is bound (true) or unschedulable (false, and
// deleted).
func submit(ctx context.Context, cs kubernetes.Interface, ns, sched string, i int, r place.Request) (bool, error) {
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
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: created.ResourceVersion})
	if err != nil {
		return false, err
	}
	defer w.Stop()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, fmt.Errorf("watch closed")
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			if p.Spec.NodeName != "" {
				return true, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
					zero := int64(0)
					err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					return false, err
				}
			}
		case <-timeout:
			return false, fmt.Errorf("neither bound nor unschedulable after 60 s")
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
