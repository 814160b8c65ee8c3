package dra

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	resourceapi "k8s.io/api/resource/v1"

	"gpuslice.io/k8s/agent/internal/daemon"
)

// Devices are the node's GPUs as the ResourceSlice shows them: one device per GPU, shared by
// many claims (allowMultipleAllocations), each consuming some of its memory (bytes; a claim
// that asks none takes all of it) and of its compute (percent; a claim that asks none takes no
// guaranteed share and runs in the time the others leave).
func Devices(gpus []daemon.GPU) []resourceapi.Device {
	out := make([]resourceapi.Device, 0, len(gpus))
	for _, g := range gpus {
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"uuid":  {StringValue: ptr(g.UUID)},
			"model": {StringValue: ptr(g.Name)},
			"index": {IntValue: ptr(int64(g.Index))},
		}
		if g.ComputeCapability != "" {
			attrs["computeCapability"] = resourceapi.DeviceAttribute{StringValue: ptr(g.ComputeCapability)}
		}
		if g.PCIBusID != "" {
			attrs["pciBusID"] = resourceapi.DeviceAttribute{StringValue: ptr(g.PCIBusID)}
		}
		for name, value := range SharingAttributes(g.Sharing) {
			attrs[name] = resourceapi.DeviceAttribute{StringValue: ptr(value)}
		}
		out = append(out, resourceapi.Device{
			Name:                     DeviceName(g.Index),
			Attributes:               attrs,
			AllowMultipleAllocations: ptr(true),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				CapacityMemory: {Value: *resource.NewQuantity(g.MemoryTotalBytes, resource.BinarySI)},
				CapacityCompute: {
					Value: *resource.NewQuantity(100, resource.DecimalSI),
					RequestPolicy: &resourceapi.CapacityRequestPolicy{
						Default: resource.NewQuantity(0, resource.DecimalSI),
						ValidRange: &resourceapi.CapacityRequestPolicyRange{
							Min:  resource.NewQuantity(0, resource.DecimalSI),
							Max:  resource.NewQuantity(100, resource.DecimalSI),
							Step: resource.NewQuantity(1, resource.DecimalSI),
						},
					},
				},
			},
		})
	}
	return out
}

// MaxAttributeString is the longest string a ResourceSlice's device attribute may hold.
const MaxAttributeString = 64

// SharingAttributes are the GPU's sharing mode as device attributes, as GKE names a node
// pool's sharing strategy: "sharing" is timeslice, mps or mig, and a GPU in MIG mode adds its
// layout as "migLayout" ("1g.10gb@0 3g.40gb@4") when it fits an attribute's 64 characters.
// A daemon that does not say gives none.
func SharingAttributes(sharing string) map[resourceapi.QualifiedName]string {
	out := map[resourceapi.QualifiedName]string{}
	mode, layout, isMIG := strings.Cut(sharing, ":")
	if mode == "" {
		return out
	}
	out["sharing"] = mode
	if isMIG && mode == "mig" && len(layout) <= MaxAttributeString {
		out["migLayout"] = layout
	}
	return out
}

func ptr[T any](v T) *T { return &v }
