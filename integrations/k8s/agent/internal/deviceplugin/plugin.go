package deviceplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpuslice.io/k8s/agent/internal/cdi"
	"gpuslice.io/k8s/agent/internal/daemon"
	"gpuslice.io/k8s/agent/internal/node"
)

// Options say where kubelet's sockets are.
type Options struct {
	PluginDir          string // kubelet's device-plugins dir: kubelet.sock is there, ours goes there
	PodResourcesSocket string // kubelet's pod-resources socket, to find the grants that ended
	Grace              time.Duration
}

const (
	socketName = "gpuslice-vram.sock"
	kind       = "device-plugin" // the tenants' directories: <state root>/device-plugin/<tenant>
)

// Plugin implements the kubelet's DevicePlugin service.
type Plugin struct {
	pb.UnimplementedDevicePluginServer
	opt  Options
	node *node.Node
	ids  []string
}

// New makes the plugin for the daemon's GPUs.
func New(opt Options, n *node.Node, gpus []daemon.GPU) *Plugin {
	if opt.Grace == 0 {
		opt.Grace = 30 * time.Second
	}
	return &Plugin{opt: opt, node: n, ids: DeviceIDs(gpus)}
}

// Run serves the plugin, registers it with kubelet (then says so on ready), and ends the
// tenants of grants kubelet no longer holds, until ctx ends.
func (p *Plugin) Run(ctx context.Context, ready chan<- struct{}) error {
	sock := filepath.Join(p.opt.PluginDir, socketName)
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("device plugin socket: %w", err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("device plugin socket: %w", err)
	}
	srv := grpc.NewServer()
	pb.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	if err := p.register(ctx); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("device plugin registered", "resource", ResourceName, "devices", len(p.ids))
	ready <- struct{}{}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := p.reap(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "ending the tenants of ended grants")
			}
		}
	}
}

func (p *Plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.opt.PluginDir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("kubelet's registration socket: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = pb.NewRegistrationClient(conn).Register(ctx, &pb.RegisterRequest{
		Version: pb.Version, Endpoint: socketName, ResourceName: ResourceName,
		Options: &pb.DevicePluginOptions{GetPreferredAllocationAvailable: true},
	})
	if err != nil {
		return fmt.Errorf("registering %s with kubelet: %w", ResourceName, err)
	}
	return nil
}

// GetDevicePluginOptions: a preferred allocation keeps a container's GiB on one GPU.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pb.Empty) (*pb.DevicePluginOptions, error) {
	return &pb.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

// ListAndWatch sends the devices once; they do not change while the agent runs.
func (p *Plugin) ListAndWatch(_ *pb.Empty, s grpc.ServerStreamingServer[pb.ListAndWatchResponse]) error {
	devs := make([]*pb.Device, 0, len(p.ids))
	for _, id := range p.ids {
		devs = append(devs, &pb.Device{ID: id, Health: pb.Healthy})
	}
	if err := s.Send(&pb.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// GetPreferredAllocation picks each container's GiB from one GPU.
func (p *Plugin) GetPreferredAllocation(_ context.Context, r *pb.PreferredAllocationRequest) (*pb.PreferredAllocationResponse, error) {
	out := &pb.PreferredAllocationResponse{}
	for _, c := range r.ContainerRequests {
		ids := Preferred(c.AvailableDeviceIDs, c.MustIncludeDeviceIDs, int(c.AllocationSize))
		out.ContainerResponses = append(out.ContainerResponses, &pb.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return out, nil
}

// grantRecord is kept in the tenant's directory: which devices, since when.
type grantRecord struct {
	Tenant   string    `json:"tenant"`
	IDs      []string  `json:"ids"`
	Created  time.Time `json:"created"`
	Labelled bool      `json:"labelled"` // its pod's labels are on the tenant
}

// Allocate makes each container's grant a held tenant, with its memory as the limit.
func (p *Plugin) Allocate(ctx context.Context, r *pb.AllocateRequest) (*pb.AllocateResponse, error) {
	out := &pb.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		resp, err := p.allocate(ctx, c.DevicesIds)
		if err != nil {
			return nil, err
		}
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}

func (p *Plugin) allocate(ctx context.Context, ids []string) (*pb.ContainerAllocateResponse, error) {
	g, err := GrantOf(ids)
	if err != nil {
		return nil, err
	}
	name := g.TenantName()
	dir := p.node.Dir(kind, name)
	if err := p.node.MakeDir(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", ResourceName, err)
	}
	if err := writeGrant(dir, &grantRecord{Tenant: name, IDs: g.IDs, Created: time.Now()}); err != nil {
		return nil, err
	}
	reg := &daemon.Registration{Name: name, GPU: g.GPU, VRAMBytes: &g.Bytes,
		Labels: map[string]string{"resource": ResourceName}}
	t, err := p.node.Register(ctx, dir, reg)
	if err != nil {
		_ = p.node.Remove(ctx, dir, "")
		return nil, fmt.Errorf("%s: %w", ResourceName, err)
	}
	klog.FromContext(ctx).Info("allocated", "tenant", name, "gpu", g.GPU, "vramBytes", g.Bytes)
	return response(t), nil
}

func response(t *cdi.Tenant) *pb.ContainerAllocateResponse {
	env, mounts := cdi.Edits(t)
	resp := &pb.ContainerAllocateResponse{Envs: map[string]string{}}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		resp.Envs[k] = v
	}
	for _, m := range mounts {
		resp.Mounts = append(resp.Mounts, &pb.Mount{HostPath: m.Host, ContainerPath: m.Container, ReadOnly: m.ReadOnly})
	}
	return resp
}

// PreStartContainer is not asked for (GetDevicePluginOptions).
func (p *Plugin) PreStartContainer(context.Context, *pb.PreStartContainerRequest) (*pb.PreStartContainerResponse, error) {
	return &pb.PreStartContainerResponse{}, nil
}

// reap ends the tenants whose devices no container holds any more (their pods have gone),
// once they are older than the grace period (kubelet lists a grant a little after Allocate),
// and labels the others with the pod and container kubelet says hold them (Allocate is not
// told).
func (p *Plugin) reap(ctx context.Context) error {
	held, err := heldDevices(ctx, p.opt.PodResourcesSocket)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(p.node.StateRoot, kind))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(p.node.StateRoot, kind, e.Name())
		rec, err := readGrant(dir)
		if err != nil {
			continue
		}
		h, ok := held[strings.Join(rec.IDs, ",")]
		switch {
		case ok && !rec.Labelled:
			errs = append(errs, p.label(ctx, dir, rec, h))
		case ok || time.Since(rec.Created) < p.opt.Grace:
		default:
			if err := p.node.Remove(ctx, dir, rec.Tenant); err != nil {
				errs = append(errs, err)
				continue
			}
			klog.FromContext(ctx).Info("grant ended", "tenant", rec.Tenant)
		}
	}
	return errors.Join(errs...)
}

func readGrant(dir string) (*grantRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, "grant.json"))
	if err != nil {
		return nil, err
	}
	var rec grantRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func writeGrant(dir string, rec *grantRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".grant.json")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("%s: %w", ResourceName, err)
	}
	return os.Rename(tmp, filepath.Join(dir, "grant.json"))
}

func (p *Plugin) label(ctx context.Context, dir string, rec *grantRecord, h holder) error {
	labels := map[string]string{"resource": ResourceName, "namespace": h.Namespace, "pod": h.Pod, "container": h.Container}
	if err := p.node.Daemon.SetLabels(ctx, rec.Tenant, labels); err != nil {
		return fmt.Errorf("labelling tenant %s: %w", rec.Tenant, err)
	}
	rec.Labelled = true
	return writeGrant(dir, rec)
}
