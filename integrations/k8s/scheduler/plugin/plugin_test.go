package plugin

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"gpuslice.io/k8s/scheduler/place"
)

func pod(name string, annos, lbls map[string]string, res v1.ResourceList) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Annotations: annos, Labels: lbls},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: res}}}},
	}
}

func TestRequestOf(t *testing.T) {
	cpu := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}
	vram := v1.ResourceList{ResourceVRAM: resource.MustParse("40")}
	cases := []struct {
		name    string
		annos   map[string]string
		res     v1.ResourceList
		want    place.Request
		vram    int64
		wantErr string
	}{
		{"cpu only", nil, cpu, place.Request{CPUMilli: 2000, MemMiB: 4096}, 0, ""},
		{"share", map[string]string{AnnoGPUMilli: "500"}, cpu, place.Request{CPUMilli: 2000, MemMiB: 4096, NumGPU: 1, GPUMilli: 500}, 0, ""},
		{"two whole", map[string]string{AnnoGPUMilli: "1000", AnnoGPUCount: "2", AnnoGPUModel: "V100M16|V100M32"}, nil,
			place.Request{NumGPU: 2, GPUMilli: 1000, GPUSpec: "V100M16|V100M32"}, 0, ""},
		{"vram", nil, vram, place.Request{NumGPU: 1, GPUMilli: 1}, 40, ""},
		{"share of two", map[string]string{AnnoGPUMilli: "500", AnnoGPUCount: "2"}, nil, place.Request{}, 0, "more than one GPU must be whole"},
		{"milli not a number", map[string]string{AnnoGPUMilli: "half"}, nil, place.Request{}, 0, `gpuslice.io/gpu-milli="half": not 1 to 1000`},
		{"milli too big", map[string]string{AnnoGPUMilli: "1001"}, nil, place.Request{}, 0, "not 1 to 1000"},
		{"count alone", map[string]string{AnnoGPUCount: "2"}, nil, place.Request{}, 0, "without gpuslice.io/gpu-milli"},
		{"count zero", map[string]string{AnnoGPUMilli: "1000", AnnoGPUCount: "0"}, nil, place.Request{}, 0, "not 1 to 16"},
		{"both", map[string]string{AnnoGPUMilli: "100"}, vram, place.Request{}, 0, "both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr, err := requestOf(pod("p", c.annos, nil, c.res))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.want.Name, c.want.Queue = "ns/p", "ns"
			if pr.req != c.want || pr.vramGiB != c.vram {
				t.Fatalf("got %+v vram %d, want %+v vram %d", pr.req, pr.vramGiB, c.want, c.vram)
			}
		})
	}
}

func TestShares(t *testing.T) {
	gib := int64(1) << 30
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"40 GiB of 80 GiB", shareOfVRAM(40, 80*1024), 500},
		{"50 GiB of 80 GiB", shareOfVRAM(50, 80*1024), 625},
		{"1 GiB of 80 GiB rounds up", shareOfVRAM(1, 80*1024), 13},
		{"more than the GPU", shareOfVRAM(81, 80*1024), 1001},
		{"claim: memory", shareOfBytes(50*gib, 80*gib, 0), 625},
		{"claim: compute is larger", shareOfBytes(10*gib, 80*gib, 30), 300},
		{"claim: whole GPU", shareOfBytes(80*gib, 80*gib, 0), 1000},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestGangOf(t *testing.T) {
	cases := []struct {
		name    string
		labels  map[string]string
		gang    string
		size    int
		wantErr string
	}{
		{"none", nil, "", 0, ""},
		{"gang", map[string]string{LabelGang: "train", LabelGangSize: "4"}, "ns/train", 4, ""},
		{"size not a number", map[string]string{LabelGang: "train", LabelGangSize: "four"}, "", 0, `gpuslice.io/gang-size="four": not 1 to 16`},
		{"size alone", map[string]string{LabelGangSize: "4"}, "", 0, "without gpuslice.io/gang"},
		{"name alone", map[string]string{LabelGang: "train"}, "", 0, "without gpuslice.io/gang-size"},
		{"bad name", map[string]string{LabelGang: "Train_1", LabelGangSize: "2"}, "", 0, `gpuslice.io/gang="Train_1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, n, err := gangOf(pod("p", nil, c.labels, nil))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || g != c.gang || n != c.size {
				t.Fatalf("got %q %d %v, want %q %d", g, n, err, c.gang, c.size)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	cases := []struct {
		raw     string
		policy  string
		wantErr string
	}{
		{``, "fgd", ""},
		{`{"policy":"best-fit"}`, "best-fit", ""},
		{`{"policy":"fgd-mem","tieSeed":3}`, "fgd-mem", ""},
		{`{"policy":"spread"}`, "", `unknown policy "spread" (known: first-fit, best-fit, gpu-packing, fgd, fgd-mem, fgd-mem-tie)`},
		{`{"policy":"fgd","coverage":2}`, "", "coverage 2 is not in (0, 1]"},
		{`{"policy":"fgd","workload":"/nonexistent.csv"}`, "", "workload: "},
	}
	for _, c := range cases {
		var obj runtime.Object
		if c.raw != "" {
			obj = &runtime.Unknown{Raw: []byte(c.raw)}
		}
		_, p, _, err := parseArgs(obj)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: err %v, want one line containing %q", c.raw, err, c.wantErr)
			}
			continue
		}
		if err != nil || p.String() != c.policy {
			t.Errorf("%s: %v %v, want %s", c.raw, p, err, c.policy)
		}
	}
}

// A node with two 80 GiB GPUs, each with 50 GiB claimed through DRA: a 40 GiB pod does not
// fit (the node's 60 GiB idle would admit it), a 30 GiB one does; the claim's end frees it.
func TestPerGPUFitWithClaims(t *testing.T) {
	v := newView(mustPolicy(t, "fgd"), 0, nil, 0.95)
	v.setNode("n1", 64000, 256*1024, 0, "", 0)
	gib := int64(1) << 30
	v.setSlice("n1", "n1-gpus", []gpuDev{{"gpu-0", 0, "H100", 80 * gib}, {"gpu-1", 1, "H100", 80 * gib}})
	v.setHolder("claim-a", &holder{node: "n1", devices: map[string]int64{"gpu-0": int64(shareOfBytes(50*gib, 80*gib, 0))}})
	v.setHolder("claim-b", &holder{node: "n1", devices: map[string]int64{"gpu-1": int64(shareOfBytes(50*gib, 80*gib, 0))}})
	p40, err := requestOf(pod("p40", nil, nil, v1.ResourceList{ResourceVRAM: resource.MustParse("40")}))
	if err != nil {
		t.Fatal(err)
	}
	ok, why := v.fits("n1", p40)
	if ok || !strings.Contains(why, "no GPU has 500 milli idle: the most is 375 (of 750 idle on the node)") {
		t.Fatalf("40 GiB: fits=%v why=%q", ok, why)
	}
	p30, _ := requestOf(pod("p30", nil, nil, v1.ResourceList{ResourceVRAM: resource.MustParse("30")}))
	if ok, why := v.fits("n1", p30); !ok {
		t.Fatalf("30 GiB refused: %s", why)
	}
	v.setHolder("claim-b", nil)
	if ok, why := v.fits("n1", p40); !ok {
		t.Fatalf("40 GiB refused after the claim ended: %s", why)
	}
	if v.rebuilds != 1 {
		t.Fatalf("%d rebuilds: holder changes must not rebuild the cluster", v.rebuilds)
	}
}

func mustPolicy(t *testing.T, name string) place.Policy {
	p, err := place.PolicyFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The plugin's scores, normalized, put the top score on the node the core's own
// gs_place_decide picks, for each policy, pod after pod, with Reserve taking each.
func TestScoreFollowsTheCore(t *testing.T) {
	shapes := []place.Request{{CPUMilli: 4000, MemMiB: 1024, NumGPU: 1, GPUMilli: 500},
		{CPUMilli: 2000, MemMiB: 1024, NumGPU: 1, GPUMilli: 250}, {CPUMilli: 8000, MemMiB: 1024, NumGPU: 1, GPUMilli: 1000},
		{CPUMilli: 1000, MemMiB: 1024}, {CPUMilli: 16000, MemMiB: 1024, NumGPU: 2, GPUMilli: 1000},
		{CPUMilli: 4000, MemMiB: 1024, NumGPU: 1, GPUMilli: 750}}
	for _, name := range place.Policies {
		t.Run(name, func(t *testing.T) {
			v := newView(mustPolicy(t, name), 5, shapes, 0.95)
			for i, g := range []int{2, 8, 4, 8, 0, 4} {
				v.setNode(string("abcdef"[i]), 64000, 256*1024, g, "V100", 16384)
			}
			placed := 0
			for k := 0; k < 40; k++ {
				pr := podRequest{req: shapes[(k*5+k/3)%len(shapes)]}
				decided := v.decide(pr)
				var scores fwk.NodeScoreList
				for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
					if ok, _ := v.fits(n, pr); ok {
						s, _ := v.score(n, pr)
						scores = append(scores, fwk.NodeScore{Name: n, Score: s})
					}
				}
				if (decided == "") != (len(scores) == 0) {
					t.Fatalf("pod %d: decide %q but %d nodes fit", k, decided, len(scores))
				}
				if decided == "" {
					continue
				}
				// Without the decided hint, the highest raw score is the core's choice.
				best := scores[0]
				for _, s := range scores {
					if s.Score > best.Score {
						best = s
					}
				}
				if best.Name != decided {
					t.Fatalf("pod %d: top score on %s, the core picks %s", k, best.Name, decided)
				}
				normalize(scores, decided)
				for _, s := range scores {
					if (s.Score == fwk.MaxNodeScore) != (s.Name == decided) || s.Score < 0 {
						t.Fatalf("pod %d: normalized %v, decided %s", k, scores, decided)
					}
				}
				if _, err := v.assume(uidOf(k), decided, pr, ""); err != nil {
					t.Fatal(err)
				}
				placed++
			}
			if placed < 10 || placed == 40 {
				t.Fatalf("%d placed: the run must fill the cluster", placed)
			}
		})
	}
}

func uidOf(k int) types.UID { return types.UID(fmt.Sprint("pod-", k)) }
