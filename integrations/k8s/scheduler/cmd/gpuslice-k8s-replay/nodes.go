// The replay's nodes: the trace's GPU nodes as kwok's Node objects. No kubelet runs; kwok's
// controller (started by cluster.sh in control-only mode) takes every node annotated
// kwok.x-k8s.io/node=fake, marks it Ready, renews its heartbeat and marks the pods bound to
// it Running. What lives here: making the nodes, waiting for kwok to have them Ready, and
// waiting for the bound pods to be Running.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"gpuslice.io/k8s/scheduler/place"
	"gpuslice.io/k8s/scheduler/plugin"
)

// AnnoKwokNode marks a node as kwok's (its --manage-nodes-with-annotation-selector).
const AnnoKwokNode = "kwok.x-k8s.io/node"

func nodeCapacity(n place.NodeSpec) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(n.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(n.MemMiB<<20, resource.BinarySI),
		v1.ResourcePods:   resource.MustParse("10000"),
		ResourceGPUMilli:  *resource.NewQuantity(int64(n.GPUs)*place.Milli, resource.DecimalSI),
	}
}

// makeNodes creates the nodes, eight at a time.
func makeNodes(ctx context.Context, cs kubernetes.Interface, nodes []place.NodeSpec) error {
	work := make(chan place.NodeSpec)
	errs := make(chan error, len(nodes))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for n := range work {
				if err := makeNode(ctx, cs, n); err != nil {
					errs <- fmt.Errorf("node %s: %w", n.Name, err)
				}
			}
		})
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs // nil when there was none
}

// makeNode creates one node with its capacity and no condition: its Ready condition and
// heartbeats are kwok's. The capacity is patched in again in case kwok initialised the
// node (with its own defaults) before this create's status was read; patches, not updates,
// since kwok writes the status concurrently.
func makeNode(ctx context.Context, cs kubernetes.Interface, n place.NodeSpec) error {
	capacity := nodeCapacity(n)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name,
			Annotations: map[string]string{AnnoKwokNode: "fake"},
			Labels: map[string]string{
				plugin.LabelNodeGPUs: strconv.Itoa(n.GPUs), plugin.LabelNodeGPUModel: n.Model,
				"kubernetes.io/hostname": n.Name, "type": "kwok"}},
		Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": capacity, "allocatable": capacity}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	// The API server taints a new node not-ready (admission NodeTaint); the node lifecycle
	// controller, which does not run here, would lift it once kwok has the node Ready.
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("taints: %w", err)
	}
	return nil
}

// kwokReady: the node is Ready with a heartbeat, which only kwok writes here.
func kwokReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue && !c.LastHeartbeatTime.IsZero()
		}
	}
	return false
}

// waitNodesReady waits until kwok has every node Ready and untainted.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, nodes []place.NodeSpec, limit time.Duration) error {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n.Name] = true
	}
	deadline := time.Now().Add(limit)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			n := &list.Items[i]
			if want[n.Name] && kwokReady(n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		if ready == len(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready by kwok after %s (is kwok running?)", ready, len(want), limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitRunning waits until the bound pods of ns are Running (kwok's pod-ready stage), and
// returns how many are; fewer than bound after the limit is reported, not an error.
func waitRunning(ctx context.Context, cs kubernetes.Interface, ns string, bound int, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		if running >= bound || time.Now().After(deadline) {
			return running, nil
		}
		time.Sleep(time.Second)
	}
}
