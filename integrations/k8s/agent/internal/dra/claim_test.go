package dra

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

const drv = "gpu.gpuslice.io"

var gib = resource.MustParse("1Gi")

func claimWith(results []resourceapi.DeviceRequestAllocationResult, cfg ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results, Config: cfg}}},
	}
}

func result(dev string, caps map[string]string) resourceapi.DeviceRequestAllocationResult {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: drv, Pool: "node", Device: dev}
	if caps != nil {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for k, v := range caps {
			r.ConsumedCapacity[resourceapi.QualifiedName(k)] = resource.MustParse(v)
		}
	}
	return r
}

func opaque(src resourceapi.AllocationConfigSource, params string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: src, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: drv, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}
}

func TestShareOf(t *testing.T) {
	mem := map[int]int64{0: 80 * gib.Value(), 1: 80 * gib.Value()}
	tests := []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		want    Share
		wantErr string
	}{
		{"memory and compute", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-1", map[string]string{"memory": "20Gi", "compute": "30"})}),
			Share{Request: "gpu", Device: "gpu-1", GPU: 1, VRAMBytes: 20 * gib.Value(), ComputePct: 30}, ""},
		{"memory only", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "30Gi", "compute": "0"})}),
			Share{Request: "gpu", Device: "gpu-0", VRAMBytes: 30 * gib.Value()}, ""},
		{"whole GPU without consumable capacity", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", nil)}),
			Share{Request: "gpu", Device: "gpu-0", Whole: true}, ""},
		{"two GPUs", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", nil), result("gpu-1", nil)}),
			Share{}, "was given 2 GPUs: a gpuslice claim is one GPU"},
		{"more memory than the GPU", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "200Gi"})}),
			Share{}, "memory 200Gi is outside the GPU's"},
		{"negative memory", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "-1Gi"})}),
			Share{}, "memory -1Gi is outside"},
		{"compute over 100", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "1Gi", "compute": "150"})}),
			Share{}, "compute 150 is not a percentage"},
		{"unknown capacity", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "1Gi", "cores": "3"})}),
			Share{}, `unknown capacity "cores"`},
		{"unknown device", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-7", nil)}),
			Share{}, `device "gpu-7" is not a GPU of this node`},
		{"not a device name", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-01", nil)}),
			Share{}, "is not a GPU of this node"},
		{"class then claim config", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "1Gi"})},
			opaque(resourceapi.AllocationConfigSourceClass, `{"computePolicy":"cap","priority":"low"}`),
			opaque(resourceapi.AllocationConfigSourceClaim, `{"priority":"high"}`)),
			Share{Request: "gpu", Device: "gpu-0", VRAMBytes: gib.Value(), Config: Config{ComputePolicy: "cap", Priority: "high"}}, ""},
		{"unknown parameter", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "1Gi"})},
			opaque(resourceapi.AllocationConfigSourceClass, `{"sharing":"timeslice"}`)),
			Share{}, `unknown field "sharing"`},
		{"bad priority", claimWith([]resourceapi.DeviceRequestAllocationResult{result("gpu-0", map[string]string{"memory": "1Gi"})},
			opaque(resourceapi.AllocationConfigSourceClaim, `{"priority":"urgent"}`)),
			Share{}, `priority "urgent" is not high, normal or low`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShareOf(tc.claim, drv, mem)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q is more than one line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got != tc.want {
				t.Fatalf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestTenantName(t *testing.T) {
	tests := []struct{ ns, claim, uid, want string }{
		{"default", "pod-a-gpu-x7k2p", "0b9e", "k8s.default.pod-a-gpu-x7k2p"},
		{"team-with-a-rather-long-namespace-name", "inference-server-7d9f8-gpu-claim-abcde", "12345678-9abc-def0-1234-56789abcdef0",
			"k8s.team-with-a-rather-long-namespace-name.inferen-123456789abc"},
	}
	for _, tc := range tests {
		got := TenantName(tc.ns, tc.claim, types.UID(tc.uid))
		if got != tc.want || len(got) > 63 {
			t.Errorf("TenantName(%s, %s) = %q (%d bytes), want %q", tc.ns, tc.claim, got, len(got), tc.want)
		}
	}
}

func TestLabels(t *testing.T) {
	p := PodLabels{Namespace: "ns", Pod: "p", PodUID: "u", Claim: "c", Containers: []string{"b", "a"},
		Selected: map[string]string{"app.kubernetes.io/name": "vllm", "9team": "x"}}
	got := p.Labels()
	want := map[string]string{"namespace": "ns", "pod": "p", "pod_uid": "u", "claim": "c", "container": "a,b",
		"app_kubernetes_io_name": "vllm", "_9team": "x"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
}
