package plugin

import (
	"testing"

	"gpuslice.io/k8s/scheduler/place"
)

// BenchmarkScore is the plugin's own time per Score call (view.score: the lock, the
// request's shape prepared, the core's score of one node) on the openb default trace's
// 1,213 nodes, half full with the trace's own pods placed by the policy. The figure goes
// in bench/RESULTS.md; run with `go test -run - -bench Score ./plugin`.
func BenchmarkScore(b *testing.B) {
	data := "../../../../data/alibaba-openb/"
	nodes, err := place.LoadOpenbNodes(data + "openb_node_list_gpu_node.csv")
	if err != nil {
		b.Fatal(err)
	}
	pods, err := place.LoadOpenbPods(data + "openb_pod_list_default.csv")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"fgd", "best-fit"} {
		b.Run(name, func(b *testing.B) {
			p, _ := place.PolicyFromName(name)
			v := newView(p, 42, pods, 0.95)
			for _, n := range nodes {
				v.setNode(n.Name, n.CPUMilli, n.MemMiB, n.GPUs, n.Model, 0)
			}
			for i := 0; i < len(pods)/2; i++ {
				pr := podRequest{req: pods[i]}
				if node := v.decide(pr); node != "" {
					if _, err := v.assume(uidOf(i), node, pr, ""); err != nil {
						b.Fatal(err)
					}
				}
			}
			pr := podRequest{req: pods[len(pods)/2]}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.score(nodes[i%len(nodes)].Name, pr)
			}
		})
	}
}
