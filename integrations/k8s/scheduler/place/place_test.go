package place

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each lib/place-*.c must have its core_*.c here, or the scheduler would miss code that
// `gpuslice pack` has (a link error at best).
func TestEveryPlaceSourceIsBuilt(t *testing.T) {
	srcs, err := filepath.Glob("../../../../lib/place-*.c")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no lib/place-*.c found: %v", err)
	}
	for _, s := range srcs {
		base := strings.TrimSuffix(filepath.Base(s), ".c")
		want := "core_" + strings.ReplaceAll(base, "-", "_") + ".c"
		b, err := os.ReadFile(want)
		if err != nil {
			t.Errorf("%s has no %s in place/", s, want)
			continue
		}
		if !strings.Contains(string(b), `#include "../../../../lib/`+base+`.c"`) {
			t.Errorf("%s does not include lib/%s.c", want, base)
		}
	}
}

func TestPolicyFromName(t *testing.T) {
	for _, n := range Policies {
		p, err := PolicyFromName(n)
		if err != nil || p.String() != n {
			t.Errorf("%s: %v %v", n, p, err)
		}
	}
	if _, err := PolicyFromName("spread"); err == nil || !strings.Contains(err.Error(), `unknown policy "spread"`) {
		t.Errorf("spread: %v", err)
	}
}

func TestRequestValid(t *testing.T) {
	cases := []struct {
		r  Request
		ok bool
	}{
		{Request{CPUMilli: 1000}, true},
		{Request{NumGPU: 1, GPUMilli: 500}, true},
		{Request{NumGPU: 2, GPUMilli: 1000}, true},
		{Request{NumGPU: 2, GPUMilli: 500}, false},
		{Request{NumGPU: 1, GPUMilli: 0}, false},
		{Request{NumGPU: 0, GPUMilli: 10}, false},
		{Request{NumGPU: 17, GPUMilli: 1000}, false},
		{Request{CPUMilli: -1}, false},
	}
	for _, c := range cases {
		if err := c.r.Valid(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.r, err)
		}
	}
}

// Through cgo, the per-GPU fit of the core: two GPUs with 625 milli taken each refuse 500
// and admit 375; Release gives it back.
func TestClusterPerGPUFit(t *testing.T) {
	cl, err := NewCluster([]NodeSpec{{Name: "n", CPUMilli: 64000, MemMiB: 262144, GPUs: 2, Model: "H100"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Free()
	held := Request{NumGPU: 1, GPUMilli: 625}
	for g := 0; g < 2; g++ {
		if err := cl.Take(&held, Choice{Node: 0, GPUMask: 1 << g}); err != nil {
			t.Fatal(err)
		}
	}
	r := Request{NumGPU: 1, GPUMilli: 500}
	if ok, why := cl.Fits(0, &r); ok || !strings.Contains(why, "the most is 375") {
		t.Fatalf("500: %v %q", ok, why)
	}
	cl.Release(&held, Choice{Node: 0, GPUMask: 1})
	if ok, why := cl.Fits(0, &r); !ok {
		t.Fatalf("500 after release: %s", why)
	}
	if st := cl.Stats(); st.CapacityMilli != 2000 || st.AllocatedMilli != 625 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := NewCluster(nil); err == nil {
		t.Fatal("an empty cluster was made")
	}
	if _, err := NewCluster([]NodeSpec{{Name: "big", GPUs: 17}}); err == nil || !strings.Contains(err.Error(), "17 GPUs") {
		t.Fatalf("17 GPUs: %v", err)
	}
}

// The Kubernetes replay submits pods in Arrivals' order and places each as the plugin
// does (decide, then commit): on the repository's openb default trace that gives exactly
// gs_place_replay's figures, for every policy.
func TestArrivalsReplayedNodeByNodeMatchPack(t *testing.T) {
	data := "../../../../data/alibaba-openb/"
	nodes, err := LoadOpenbNodes(data + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := LoadOpenbPods(data + "openb_pod_list_default.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fgd", "best-fit"} {
		p, _ := PolicyFromName(name)
		want, err := Replay(nodes, pods, p, 1.3, 42)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewCluster(nodes)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.SetWorkload(pods, 0.95); err != nil {
			t.Fatal(err)
		}
		cl.SetTieSeed(42)
		order, err := Arrivals(pods, cl.Stats().CapacityMilli, 1.3, 42)
		if err != nil {
			t.Fatal(err)
		}
		placed := 0
		for _, k := range order {
			if ch, ok := cl.Decide(p, &pods[k]); ok {
				cl.Commit(&pods[k], ch)
				placed++
			}
		}
		st := cl.Stats()
		cl.Free()
		if placed != want.Placed || st.AllocRatio() != want.AllocRatio || st.FragRatio() != want.FragRatio {
			t.Errorf("%s: placed %d alloc %.6f frag %.6f; gs_place_replay: %d %.6f %.6f", name, placed,
				st.AllocRatio(), st.FragRatio(), want.Placed, want.AllocRatio, want.FragRatio)
		}
	}
}
