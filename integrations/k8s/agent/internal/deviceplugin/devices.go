// Package deviceplugin is gpuslice's device plugin, for clusters without DRA: it advertises
// gpuslice.io/vram, one device per GiB of each GPU, and turns each container's allocation into a
// held tenant of the node daemon with that much memory (docs/kubernetes.md).
package deviceplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gpuslice.io/k8s/agent/internal/daemon"
)

// ResourceName is what a pod asks for, in GiB: `gpuslice.io/vram: 20`.
const ResourceName = "gpuslice.io/vram"

const gib = int64(1) << 30

// DeviceIDs are the node's GiB devices: gpu<index>-gib<k>, k from 0, whole GiB of each GPU.
func DeviceIDs(gpus []daemon.GPU) []string {
	var out []string
	for _, g := range gpus {
		for k := int64(0); k < g.MemoryTotalBytes/gib; k++ {
			out = append(out, fmt.Sprintf("gpu%d-gib%d", g.Index, k))
		}
	}
	return out
}

func gpuOf(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, "gpu")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, "-gib")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// Grant is what one container was allocated: n GiB of one GPU.
type Grant struct {
	GPU   int
	Bytes int64
	IDs   []string // sorted
}

// GrantOf reads a container's device IDs. They must all be of one GPU: a tenant's memory
// limit is per GPU, and gpuslice gives a container one GPU's memory.
func GrantOf(ids []string) (*Grant, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no device", ResourceName)
	}
	g := &Grant{GPU: -1, IDs: append([]string(nil), ids...)}
	sort.Strings(g.IDs)
	for _, id := range g.IDs {
		i, ok := gpuOf(id)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not one of this node's devices", ResourceName, id)
		}
		if g.GPU >= 0 && i != g.GPU {
			return nil, fmt.Errorf("%s: %d GiB spread over GPUs %d and %d: ask for no more than one GPU has",
				ResourceName, len(ids), g.GPU, i)
		}
		g.GPU = i
	}
	g.Bytes = int64(len(ids)) * gib
	return g, nil
}

// TenantName names a grant's tenant after its devices, which kubelet gives one container
// at a time: k8s.vram.<12 hex digits of their hash>.
func (g *Grant) TenantName() string {
	h := sha256.Sum256([]byte(strings.Join(g.IDs, ",")))
	return "k8s.vram." + hex.EncodeToString(h[:6])
}

// Preferred picks size devices of one GPU from available, keeping must: the GPU with the
// fewest free GiB that still has room (packing, so that large requests find a whole GPU).
func Preferred(available, must []string, size int) []string {
	byGPU := map[int][]string{}
	for _, id := range available {
		if i, ok := gpuOf(id); ok {
			byGPU[i] = append(byGPU[i], id)
		}
	}
	want := -1
	if len(must) > 0 {
		want, _ = gpuOf(must[0])
	}
	best := -1
	for i, ids := range byGPU {
		if len(ids) < size || (want >= 0 && i != want) {
			continue
		}
		if best < 0 || len(ids) < len(byGPU[best]) || (len(ids) == len(byGPU[best]) && i < best) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	ids := byGPU[best]
	sort.Strings(ids)
	have := map[string]bool{}
	out := append([]string(nil), must...)
	for _, id := range must {
		have[id] = true
	}
	for _, id := range ids {
		if len(out) >= size {
			break
		}
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}
