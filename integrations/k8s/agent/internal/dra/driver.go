// Package dra is gpuslice's DRA kubelet plugin, gpu.gpuslice.io: it publishes the node's GPUs
// as shareable devices with memory and compute capacity, and turns each prepared claim into a
// held tenant of the node daemon, which holds its limits (docs/kubernetes.md).
package dra

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	corev1 "k8s.io/api/core/v1"

	"gpuslice.io/k8s/agent/internal/cdi"
	"gpuslice.io/k8s/agent/internal/daemon"
	"gpuslice.io/k8s/agent/internal/node"
)

// Options say what the driver is called and where its CDI specs go; cmd/gpuslice-k8s fills
// them from its flags.
type Options struct {
	DriverName   string
	NodeName     string
	CDIDir       string
	PodLabelKeys []string // the pod labels copied onto its tenant
}

// Driver implements kubeletplugin.DRAPlugin.
type Driver struct {
	opt  Options
	node *node.Node
	kube kubernetes.Interface
	mem  map[int]int64
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New makes the driver for the daemon's GPUs.
func New(opt Options, n *node.Node, kube kubernetes.Interface, gpus []daemon.GPU) *Driver {
	mem := map[int]int64{}
	for _, g := range gpus {
		mem[g.Index] = g.MemoryTotalBytes
	}
	return &Driver{opt: opt, node: n, kube: kube, mem: mem}
}

// Resources is what the driver publishes: one pool, named after the node, of one slice.
func Resources(node string, gpus []daemon.GPU) resourceslice.DriverResources {
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: Devices(gpus)}}},
	}}
}

func (d *Driver) claimDir(uid types.UID) string { return d.node.Dir("claims", string(uid)) }

// PrepareResourceClaims registers each claim's tenant and writes its CDI spec.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = d.prepare(ctx, c)
	}
	return out, nil
}

func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	share, err := ShareOf(claim, d.opt.DriverName, d.mem)
	if err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	labels, err := d.podLabels(ctx, claim)
	if err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	name := TenantName(claim.Namespace, claim.Name, claim.UID)
	dir := d.claimDir(claim.UID)
	if err := d.register(ctx, claim, share, name, dir, labels); err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	klog.FromContext(ctx).Info("prepared", "claim", klog.KObj(claim), "tenant", name, "gpu", share.GPU,
		"vramBytes", share.VRAMBytes, "computePct", share.ComputePct)
	return kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{{
		Requests:     []string{share.Request},
		PoolName:     d.opt.NodeName,
		DeviceName:   share.Device,
		CDIDeviceIDs: []string{cdi.DeviceID(string(claim.UID))},
	}}}
}

// register does the node's part of a claim, all or nothing: the record first (so that an
// unprepare after a crash finds what to undo), then the tenant, then the CDI spec.
func (d *Driver) register(ctx context.Context, claim *resourceapi.ResourceClaim, s *Share, name, dir string, labels map[string]string) error {
	if err := d.node.MakeDir(dir); err != nil {
		return fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	if err := writeRecord(dir, &record{Tenant: name, Namespace: claim.Namespace, Claim: claim.Name}); err != nil {
		return err
	}
	reg := &daemon.Registration{Name: name, Labels: labels, GPU: s.GPU,
		ComputePolicy: s.Config.ComputePolicy, Priority: s.Config.Priority}
	if !s.Whole {
		reg.VRAMBytes = ptr(s.VRAMBytes)
	}
	if s.ComputePct > 0 {
		reg.ComputePct = ptr(float64(s.ComputePct))
	}
	t, err := d.node.Register(ctx, dir, reg)
	if err != nil {
		d.undo(ctx, claim.UID, "")
		return fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	t.ClaimUID = string(claim.UID)
	if err := cdi.Write(d.opt.CDIDir, t); err != nil {
		d.undo(ctx, claim.UID, name)
		return err
	}
	return nil
}

// undo removes what register made; errors are logged, the first one returned.
func (d *Driver) undo(ctx context.Context, uid types.UID, tenant string) error {
	err := errors.Join(d.node.Remove(ctx, d.claimDir(uid), tenant), cdi.Remove(d.opt.CDIDir, string(uid)))
	if err != nil {
		klog.FromContext(ctx).Error(err, "undoing a claim", "uid", uid)
	}
	return err
}

// podLabels finds the pod a claim is reserved for and the containers of it that use the claim.
func (d *Driver) podLabels(ctx context.Context, claim *resourceapi.ResourceClaim) (map[string]string, error) {
	p := PodLabels{Namespace: claim.Namespace, Claim: claim.Name}
	for _, ref := range claim.Status.ReservedFor {
		if ref.Resource != "pods" || ref.APIGroup != "" {
			continue
		}
		p.Pod, p.PodUID = ref.Name, string(ref.UID)
		if d.kube == nil {
			break
		}
		pod, err := d.kube.CoreV1().Pods(claim.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("claim %s/%s: its pod %s: %w", claim.Namespace, claim.Name, ref.Name, err)
		}
		p.Containers = containersUsing(pod, claim.Name)
		p.Selected = map[string]string{}
		for _, k := range d.opt.PodLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				p.Selected[k] = v
			}
		}
		break
	}
	return p.Labels(), nil
}

// containersUsing names the pod's containers whose resources name the claim.
func containersUsing(pod *corev1.Pod, claim string) []string {
	podNames := map[string]bool{} // the pod's own names for the claim
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil && *rc.ResourceClaimName == claim {
			podNames[rc.Name] = true
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil && *st.ResourceClaimName == claim {
			podNames[st.Name] = true
		}
	}
	var out []string
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, r := range c.Resources.Claims {
				if podNames[r.Name] {
					out = append(out, c.Name)
					break
				}
			}
		}
	}
	return out
}

// UnprepareResourceClaims ends each claim's tenant and removes its spec and directory. A claim
// not prepared here is done already; a tenant whose processes still run is retried by kubelet.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.unprepare(ctx, c)
	}
	return out, nil
}

func (d *Driver) unprepare(ctx context.Context, c kubeletplugin.NamespacedObject) error {
	rec, err := readRecord(d.claimDir(c.UID))
	if err != nil {
		return err
	}
	if rec == nil {
		return cdi.Remove(d.opt.CDIDir, string(c.UID))
	}
	if err := d.undo(ctx, c.UID, rec.Tenant); err != nil {
		if daemon.IsStatus(err, http.StatusConflict) {
			return fmt.Errorf("claim %s/%s: %w; kubelet retries", c.Namespace, c.Name, err)
		}
		return fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	klog.FromContext(ctx).Info("unprepared", "claim", c.String(), "tenant", rec.Tenant)
	return nil
}

// HandleError logs background errors (publishing ResourceSlices); the helper retries them.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	runtime.HandleErrorWithContext(ctx, err, msg)
}

// WatchHealthStatus: device health comes from the daemon's metrics, not through kubelet yet.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
