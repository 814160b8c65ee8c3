package dra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The capacities each GPU device publishes (see devices.go), as a claim consumes them.
const (
	CapacityMemory  resourceapi.QualifiedName = "memory"  // bytes
	CapacityCompute resourceapi.QualifiedName = "compute" // percent of the GPU's time
)

// Share is what one claim was allocated on this node: one GPU, and how much of it.
type Share struct {
	Request    string // the claim's request (or subrequest) the device is for
	Device     string // the device's name in the ResourceSlice, "gpu-<index>"
	GPU        int    // the daemon's GPU index
	Whole      bool   // allocated without consumable capacity: the whole GPU, no limit
	VRAMBytes  int64  // > 0 unless Whole
	ComputePct int64  // 0: no compute share asked
	Config     Config
}

// Config is what a claim's or its DeviceClass's opaque configuration for this driver may say.
type Config struct {
	ComputePolicy string `json:"computePolicy,omitempty"` // "share" (the default) or "cap"
	Priority      string `json:"priority,omitempty"`      // "high", "normal" (the default) or "low"
}

// DeviceName is the ResourceSlice name of GPU index.
func DeviceName(index int) string { return "gpu-" + strconv.Itoa(index) }

func deviceIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "gpu-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == s
}

// ShareOf reads what claim was allocated from driver on this node, against the GPUs the
// daemon has (memory total by index). A claim gets one GPU: more is an error naming what was
// asked, as is a capacity outside the GPU or a configuration this driver does not know.
func ShareOf(claim *resourceapi.ResourceClaim, driver string, memTotal map[int]int64) (*Share, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == driver {
			results = append(results, r)
		}
	}
	switch {
	case len(results) == 0:
		return nil, fmt.Errorf("claim %s/%s has no device of %s", claim.Namespace, claim.Name, driver)
	case len(results) > 1:
		return nil, fmt.Errorf("claim %s/%s was given %d GPUs: a gpuslice claim is one GPU (use one claim per GPU)",
			claim.Namespace, claim.Name, len(results))
	}
	r := results[0]
	idx, ok := deviceIndex(r.Device)
	total, known := memTotal[idx]
	if !ok || !known {
		return nil, fmt.Errorf("claim %s/%s: device %q is not a GPU of this node", claim.Namespace, claim.Name, r.Device)
	}
	s := &Share{Request: r.Request, Device: r.Device, GPU: idx}
	if err := capacityOf(&r, total, s); err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	cfg, err := configOf(claim.Status.Allocation.Devices.Config, driver, r.Request)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	s.Config = cfg
	return s, nil
}

func capacityOf(r *resourceapi.DeviceRequestAllocationResult, total int64, s *Share) error {
	if r.ConsumedCapacity == nil {
		s.Whole = true
		return nil
	}
	for name := range r.ConsumedCapacity {
		if name != CapacityMemory && name != CapacityCompute {
			return fmt.Errorf("unknown capacity %q (known: memory, compute)", name)
		}
	}
	mem, ok := r.ConsumedCapacity[CapacityMemory]
	if !ok {
		return fmt.Errorf("no memory capacity consumed")
	}
	s.VRAMBytes = mem.Value()
	if s.VRAMBytes <= 0 || s.VRAMBytes > total {
		return fmt.Errorf("memory %s is outside the GPU's %d bytes", mem.String(), total)
	}
	if c, ok := r.ConsumedCapacity[CapacityCompute]; ok {
		s.ComputePct = c.Value()
		if s.ComputePct < 0 || s.ComputePct > 100 {
			return fmt.Errorf("compute %s is not a percentage in [0, 100]", c.String())
		}
	}
	return nil
}

// configOf merges the opaque configurations for driver that apply to request, the class's
// first and the claim's after, as Kubernetes orders them.
func configOf(cfgs []resourceapi.DeviceAllocationConfiguration, driver, request string) (Config, error) {
	var out Config
	for _, c := range cfgs {
		if c.Opaque == nil || c.Opaque.Driver != driver || !appliesTo(c.Requests, request) {
			continue
		}
		var one Config
		dec := json.NewDecoder(bytes.NewReader(c.Opaque.Parameters.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&one); err != nil {
			return out, fmt.Errorf("%s parameters from the %s: %v (known: computePolicy, priority)",
				driver, strings.ToLower(string(c.Source)), err)
		}
		if err := one.check(); err != nil {
			return out, err
		}
		if one.ComputePolicy != "" {
			out.ComputePolicy = one.ComputePolicy
		}
		if one.Priority != "" {
			out.Priority = one.Priority
		}
	}
	return out, nil
}

func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 {
		return true
	}
	for _, r := range requests {
		if r == request || strings.HasPrefix(request, r+"/") {
			return true
		}
	}
	return false
}

func (c Config) check() error {
	switch c.ComputePolicy {
	case "", "share", "cap":
	default:
		return fmt.Errorf("computePolicy %q is not share or cap", c.ComputePolicy)
	}
	switch c.Priority {
	case "", "high", "normal", "low":
	default:
		return fmt.Errorf("priority %q is not high, normal or low", c.Priority)
	}
	return nil
}

// TenantName is the daemon's name for a claim's tenant: k8s.<namespace>.<claim>, which is
// made of the tenant name's characters already (namespace and claim names are DNS names); one
// that would pass 63 bytes keeps its start and ends in the claim's UID instead.
func TenantName(namespace, claim string, uid types.UID) string {
	const max = 63
	n := "k8s." + namespace + "." + claim
	if len(n) <= max {
		return n
	}
	u := strings.ReplaceAll(string(uid), "-", "")
	if len(u) > 12 {
		u = u[:12]
	}
	return n[:max-len(u)-1] + "-" + u
}

// LabelKey makes a Kubernetes label key a gpuslice label key (A-Z a-z 0-9 _, not starting
// with a digit, as Prometheus's): "app.kubernetes.io/name" becomes "app_kubernetes_io_name".
func LabelKey(k string) string {
	b := []byte(k)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// PodLabels are the labels of a claim's tenant that say whose it is.
type PodLabels struct {
	Namespace, Pod, PodUID, Claim string
	Containers                    []string          // the pod's containers that use the claim
	Selected                      map[string]string // the pod's own labels that the config selects
}

// Labels is the tenant's label set.
func (p PodLabels) Labels() map[string]string {
	out := map[string]string{}
	for k, v := range p.Selected {
		out[LabelKey(k)] = v
	}
	out["namespace"] = p.Namespace
	out["pod"] = p.Pod
	out["pod_uid"] = p.PodUID
	out["claim"] = p.Claim
	c := append([]string(nil), p.Containers...)
	sort.Strings(c)
	out["container"] = strings.Join(c, ",")
	return out
}
