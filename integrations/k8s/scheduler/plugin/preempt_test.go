package plugin

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestParseArgsQueues(t *testing.T) {
	cases := []struct {
		raw     string
		wantErr string
	}{
		{`{"queues":[{"name":"a","guaranteedMilli":1000},{"name":"b","guaranteedMilli":0,"weight":0}]}`, ""},
		{`{"queues":[{"name":"a","guaranteedMilli":-1}]}`, "queues[0].guaranteedMilli -1 is not >= 0"},
		{`{"queues":[{"name":"a"},{"name":"b","weight":-2}]}`, "queues[1].weight -2 is not >= 0"},
		{`{"queues":[{"name":"a"},{"name":"a"}]}`, `queues[1].name "a" is given twice`},
		{`{"queues":[{"guaranteedMilli":5}]}`, `queues[0].name "": a queue needs a name other than "default"`},
		{`{"queues":[{"name":"default"}]}`, `queues[0].name "default"`},
		{`{"queues":[{"name":"a","guaranteedMilli":"lots"}]}`, "plugin args: "},
	}
	for _, c := range cases {
		a, _, _, err := parseArgs(&runtime.Unknown{Raw: []byte(c.raw)})
		if c.wantErr == "" {
			qs := queueSpecs(a.Queues)
			if err != nil || len(qs) != 2 || qs[0].Weight != 1 || qs[1].Weight != 0 || qs[0].QuotaMilli != 1000 {
				t.Errorf("%s: %+v %v", c.raw, qs, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q", c.raw, err, c.wantErr)
		}
	}
}

func TestQueueOfIsTheLabelElseTheNamespace(t *testing.T) {
	if q := queueOf(pod("p", nil, map[string]string{LabelQueue: "team-a"}, nil)); q != "team-a" {
		t.Errorf("labelled: %q", q)
	}
	if q := queueOf(pod("p", nil, nil, nil)); q != "ns" {
		t.Errorf("unlabelled: %q", q)
	}
}

// gpuPod is a pod of queue asking milli of one GPU at priority, created at minute k.
func gpuPod(name, queue string, milli string, priority int32, k int) *v1.Pod {
	p := pod(name, map[string]string{AnnoGPUMilli: milli}, map[string]string{LabelQueue: queue}, nil)
	p.Spec.Priority = &priority
	p.CreationTimestamp.Time = time.Date(2026, 1, 1, 0, k, 0, 0, time.UTC)
	return p
}

// The integration test's scenario and its variations, on a view of one node with two
// 80 GiB GPUs: each running pod is bound where the case says, as the informers report it.
func TestVictimsFromTheView(t *testing.T) {
	queues := queueSpecs([]QueueArg{{Name: "a", GuaranteedMilli: 1000}, {Name: "b"}, {Name: "c", GuaranteedMilli: 1000},
		{Name: "d", GuaranteedMilli: 2000}})
	type running struct {
		p    *v1.Pod
		gpus string
		gone bool
	}
	cases := []struct {
		name    string
		running []running
		req     *v1.Pod
		victims string // comma-separated names; "" when none
		reason  string
	}{
		{"in quota evicts the newest over-quota pod of another queue",
			[]running{{gpuPod("b1", "b", "1000", 0, 1), "0", false}, {gpuPod("b2", "b", "600", 0, 2), "1", false},
				{gpuPod("c0", "c", "400", 0, 3), "1", false}},
			gpuPod("a1", "a", "400", 0, 4), "ns/b2", "in quota (queue a 0+400 <= 1000 milli)"},
		{"admission order is creation time: the newer b goes",
			[]running{{gpuPod("b1", "b", "1000", 0, 5), "0", false}, {gpuPod("b2", "b", "600", 0, 2), "1", false},
				{gpuPod("c0", "c", "400", 0, 3), "1", false}},
			gpuPod("a1", "a", "400", 0, 6), "ns/b1", ""},
		{"a victim already being deleted is chosen again, not another",
			[]running{{gpuPod("b1", "b", "1000", 0, 1), "0", false}, {gpuPod("b2", "b", "600", 0, 2), "1", true},
				{gpuPod("c0", "c", "400", 0, 3), "1", false}},
			gpuPod("a1", "a", "400", 0, 4), "ns/b2", ""},
		{"an over-quota pod never preempts",
			[]running{{gpuPod("b1", "b", "1000", 0, 1), "0", false}, {gpuPod("a0", "a", "1000", 0, 2), "1", false}},
			gpuPod("a1", "a", "400", 100, 4), "", "over quota: queue a 1000+400 > 1000 milli"},
		{"in-quota pods are never victims",
			[]running{{gpuPod("d0", "d", "1000", 0, 1), "0", false}, {gpuPod("d1", "d", "1000", 0, 2), "1", false}},
			gpuPod("a1", "a", "400", 0, 3), "", "in quota (queue a 0+400 <= 1000 milli), but no node fits it"},
		{"an unconfigured queue is default: over quota, so a victim",
			[]running{{gpuPod("x0", "x", "1000", 0, 1), "0", false}, {gpuPod("x1", "x", "1000", 0, 2), "1", false}},
			gpuPod("c1", "c", "700", 0, 3), "ns/x1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newView(mustPolicy(t, "fgd"), 0, nil, 0.95)
			v.setNode("n1", 64000, 256*1024, 2, "H100", 80*1024)
			pl := &Plugin{view: v}
			for _, r := range c.running {
				r.p.Spec.NodeName = "n1"
				r.p.Annotations[AnnoGPUs] = r.gpus
				if r.gone {
					r.p.DeletionTimestamp = &r.p.CreationTimestamp
				}
				pl.onPod(r.p, false)
			}
			before, _ := v.stats()
			pr, err := requestOf(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := v.fits("n1", pr); ok {
				t.Fatalf("%s fits without preemption: the case is wrong", c.req.Name)
			}
			vs, node, why, err := v.victims(queues, pr, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, x := range vs {
				names = append(names, x.name)
			}
			if got := strings.Join(names, ","); got != c.victims || !strings.Contains(why, c.reason) {
				t.Fatalf("victims %q on %q (%s), want %q with %q", got, node, why, c.victims, c.reason)
			}
			if len(vs) > 0 && node != "n1" {
				t.Fatalf("node %q", node)
			}
			if after, _ := v.stats(); after != before {
				t.Fatalf("the view changed: %+v then %+v", before, after)
			}
			for _, x := range vs {
				v.setHolder(x.uid, nil)
			}
			if ok, why := v.fits("n1", pr); len(vs) > 0 && !ok {
				t.Fatalf("%s still does not fit once the victims are gone: %s", c.req.Name, why)
			}
		})
	}
}

func TestPostFilterNominatesTheVictimsNode(t *testing.T) {
	v := newView(mustPolicy(t, "fgd"), 0, nil, 0.95)
	v.setNode("n1", 64000, 256*1024, 2, "H100", 80*1024)
	v.setNode("n2", 64000, 256*1024, 2, "H100", 80*1024)
	pl := &Plugin{view: v, queues: queueSpecs([]QueueArg{{Name: "a", GuaranteedMilli: 1000}})}
	for i, n := range []string{"n1", "n1", "n2", "n2"} {
		p := gpuPod(string(rune('w'+i)), "b", "1000", 0, i)
		p.Spec.NodeName, p.Annotations[AnnoGPUs] = n, []string{"0", "1"}[i%2]
		pl.onPod(p, false)
	}
	a := gpuPod("a1", "a", "1000", 0, 9)
	pr, _ := requestOf(a)
	cs := framework.NewCycleState()
	cs.Write(stateKey, &cycleState{pr: pr})
	res, st := pl.PostFilter(t.Context(), cs, a, nil)
	if !st.IsSuccess() || res == nil || res.NominatedNodeName != "n2" {
		t.Fatalf("%v %v: want the newest over-quota pod's node n2", res, st)
	}
	if !strings.Contains(st.Message(), "preempting ns/z on n2") {
		t.Fatalf("status %q", st.Message())
	}
	b := gpuPod("b9", "b", "1000", 0, 10)
	pr, _ = requestOf(b)
	cs.Write(stateKey, &cycleState{pr: pr})
	if res, st := pl.PostFilter(t.Context(), cs, b, nil); st.IsSuccess() || res != nil ||
		!strings.Contains(st.Message(), "gpuslice: no preemption: over quota: queue default 0+1000 > 0") {
		t.Fatalf("an over-quota pod preempted: %v %v", res, st)
	}
}
