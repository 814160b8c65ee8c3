// The scheduler benchmark (--burst N): the trace's first N arrivals submitted at once to
// one scheduler, timed from the first create to the last decision (bound, or found
// unschedulable), for each scheduler of --schedulers in turn, on the same nodes, --rounds
// times; the order of the schedulers alternates from round to round, so that neither always
// goes first. Between runs the pods are deleted (at once: no kubelet, kwok lets them go).
// What is measured is the scheduler's pace seen from a client: the creates (16 at a time)
// and the watch are the same for every scheduler.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

type burstRun struct {
	Scheduler     string  `json:"scheduler"`
	Round         int     `json:"round"`
	Pods          int     `json:"pods"`
	Bound         int     `json:"pods_bound"`
	Unschedulable int     `json:"pods_unschedulable"`
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"pods_per_second"`
}

type burstResult struct {
	Mode   string             `json:"mode"`
	Nodes  int                `json:"nodes"`
	Pods   int                `json:"pods"`
	Seed   uint64             `json:"seed"`
	Runs   []burstRun         `json:"runs"`
	Median map[string]float64 `json:"median_pods_per_second"`
}

func runBurst(ctx context.Context, o *options, s *setup) error {
	order := s.order[:min(o.burst, len(s.order))]
	scheds := strings.Split(o.schedulers, ",")
	res := burstResult{Mode: "burst", Nodes: len(s.nodes), Pods: len(order), Seed: o.seed, Median: map[string]float64{}}
	for r := range o.rounds {
		turn := slices.Clone(scheds)
		if r%2 == 1 {
			slices.Reverse(turn)
		}
		for _, sched := range turn {
			ns := fmt.Sprintf("burst-%d-%s", r, sched)
			run, err := burstOnce(ctx, s, ns, sched, order)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", sched, r, err)
			}
			run.Round = r
			res.Runs = append(res.Runs, run)
			if err := emptyNamespace(ctx, s.cs, ns); err != nil {
				return err
			}
		}
	}
	for _, sched := range scheds {
		var v []float64
		for _, run := range res.Runs {
			if run.Scheduler == sched {
				v = append(v, run.PodsPerSecond)
			}
		}
		sort.Float64s(v)
		res.Median[sched] = v[len(v)/2]
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// burstOnce submits the pods to sched in ns and waits for a decision on each.
func burstOnce(ctx context.Context, s *setup, ns, sched string, order []int) (burstRun, error) {
	run := burstRun{Scheduler: sched, Pods: len(order)}
	if err := makeNamespace(ctx, s.cs, ns); err != nil {
		return run, err
	}
	if err := emptyNamespace(ctx, s.cs, ns); err != nil { // left by an earlier run
		return run, err
	}
	list, err := s.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return run, err
	}
	// A watch that resumes where it was when the server closes it.
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return s.cs.CoreV1().Pods(ns).Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		return run, err
	}
	defer w.Stop()
	t0 := time.Now()
	errs := createAll(ctx, s.cs, ns, sched, s, order)
	decided := map[string]bool{}
	var last time.Time
	timeout := time.After(10 * time.Minute)
	for len(decided) < len(order) {
		select {
		case err := <-errs:
			if err != nil {
				return run, err
			}
			errs = nil // all created
		case ev, ok := <-w.ResultChan():
			if !ok {
				return run, fmt.Errorf("watch closed after %d of %d decisions", len(decided), len(order))
			}
			if ev.Type == watch.Error {
				return run, fmt.Errorf("watch: %v", apierrors.FromObject(ev.Object))
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod || ev.Type == watch.Deleted || decided[p.Name] {
				continue
			}
			switch {
			case p.Spec.NodeName != "":
				run.Bound++
			case unschedulable(p):
				run.Unschedulable++
			default:
				continue
			}
			decided[p.Name] = true
			last = time.Now()
		case <-timeout:
			return run, fmt.Errorf("%d of %d pods decided after 10 min", len(decided), len(order))
		}
	}
	run.Seconds = last.Sub(t0).Seconds()
	run.PodsPerSecond = float64(len(order)) / run.Seconds
	return run, nil
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// createAll creates the pods, 16 at a time; the channel gets the first error, or nil once
// all are created.
func createAll(ctx context.Context, cs kubernetes.Interface, ns, sched string, s *setup, order []int) chan error {
	done := make(chan error, 1)
	work := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, replayPod(ns, sched, i, s.pods[order[i]]), metav1.CreateOptions{}); err != nil {
					once.Do(func() { done <- fmt.Errorf("pod %d: %w", i, err) })
				}
			}
		})
	}
	go func() {
		for i := range order {
			work <- i
		}
		close(work)
		wg.Wait()
		once.Do(func() { done <- nil })
	}()
	return done
}

// emptyNamespace deletes the namespace's pods at once and waits until they are gone, so
// that the next run finds the nodes empty. The namespace itself stays: no controller-manager
// runs to finish deleting it.
func emptyNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return err
	}
	for range 600 {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			// The schedulers' caches follow their watches: give them a moment.
			time.Sleep(2 * time.Second)
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("pods of %s still there after 5 min", ns)
}
