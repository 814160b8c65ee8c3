// Command gpuslice-k8s is gpuslice's node agent for Kubernetes: the DRA kubelet plugin
// gpu.gpuslice.io. It talks to the node daemon over its Unix socket; the daemon holds the
// limits. See docs/kubernetes.md.
//
// Exit status: 0 when stopped by SIGTERM or SIGINT, 1 when it fails to start or fails while
// running (one line on stderr says why), 2 for a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"gpuslice.io/k8s/agent/internal/cdi"
	"gpuslice.io/k8s/agent/internal/daemon"
	"gpuslice.io/k8s/agent/internal/deviceplugin"
	"gpuslice.io/k8s/agent/internal/dra"
	"gpuslice.io/k8s/agent/internal/node"
)

// DriverName is the DRA driver's name, the DeviceClass's selector and the CDI vendor's domain.
const DriverName = "gpu.gpuslice.io"

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

type config struct {
	kubeconfig, nodeName       string
	socket, daemonStateDir     string
	stateRoot, cdiDir, preload string
	pluginsDir, registryDir    string
	podLabels                  string
	dra, devicePlugin          bool
	devicePluginsDir           string
	podResources               string
	cdiEnv, cdiMounts          listFlag
	mounts                     []cdi.Mount
	daemonWait                 time.Duration
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("gpuslice-k8s", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty: in-cluster config")
	fs.StringVar(&c.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	fs.StringVar(&c.socket, "daemon-socket", "/run/gpuslice/gpuslice.sock", "the gpuslice daemon's socket")
	fs.StringVar(&c.daemonStateDir, "daemon-state-dir", "", "the daemon's state dir, which holds limits/ (default: the socket's directory)")
	fs.StringVar(&c.stateRoot, "state-root", "/var/lib/gpuslice-k8s", "where each claim's directory is made (claims/<uid>)")
	fs.StringVar(&c.cdiDir, "cdi-dir", "/var/run/cdi", "where CDI specs are written; the container runtime must read them")
	fs.StringVar(&c.preload, "preload", "/usr/lib/gpuslice/libgpuslice.so", "libgpuslice.so on the host")
	fs.StringVar(&c.pluginsDir, "kubelet-plugins-dir", "/var/lib/kubelet/plugins", "kubelet's plugins directory")
	fs.StringVar(&c.registryDir, "kubelet-registry-dir", "/var/lib/kubelet/plugins_registry", "kubelet's plugin registration directory")
	fs.BoolVar(&c.dra, "dra", true, "serve the DRA kubelet plugin "+DriverName+" (Kubernetes 1.34 and later)")
	fs.BoolVar(&c.devicePlugin, "device-plugin", false, "serve the device plugin for "+deviceplugin.ResourceName+" (GiB of GPU memory; clusters without DRA)")
	fs.StringVar(&c.devicePluginsDir, "kubelet-device-plugins-dir", "/var/lib/kubelet/device-plugins", "kubelet's device plugins directory")
	fs.StringVar(&c.podResources, "kubelet-pod-resources-socket", "/var/lib/kubelet/pod-resources/kubelet.sock", "kubelet's pod-resources socket")
	fs.StringVar(&c.podLabels, "pod-labels", "", "comma-separated pod label keys copied onto each tenant")
	fs.Var(&c.cdiEnv, "cdi-env", "KEY=VALUE added to every claim's containers (repeatable)")
	fs.Var(&c.cdiMounts, "cdi-mount", "/host:/container[:ro] bind-mounted into every claim's containers (repeatable), e.g. the driver's libraries where no container toolkit mounts them")
	fs.DurationVar(&c.daemonWait, "daemon-wait", time.Minute, "how long to wait for the daemon to answer at start")
	fs.SetOutput(io.Discard) // a bad flag is one line (main); -h prints the usage
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.nodeName == "" {
		return nil, errors.New("--node-name (or $NODE_NAME) is required")
	}
	for _, e := range c.cdiEnv {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, fmt.Errorf("--cdi-env %q: want KEY=VALUE", e)
		}
	}
	for _, m := range c.cdiMounts {
		mt, err := cdi.ParseMount(m)
		if err != nil {
			return nil, fmt.Errorf("--cdi-mount: %w", err)
		}
		c.mounts = append(c.mounts, mt)
	}
	if c.podLabels != "" && slices.Contains(strings.Split(c.podLabels, ","), "") {
		return nil, fmt.Errorf("--pod-labels %q: want label keys separated by commas", c.podLabels)
	}
	if !c.dra && !c.devicePlugin {
		return nil, errors.New("nothing to serve: --dra=false and no --device-plugin")
	}
	if c.daemonStateDir == "" {
		c.daemonStateDir = filepath.Dir(c.socket)
	}
	return c, nil
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "gpuslice-k8s: %v\n", err)
		os.Exit(1)
	}
}

func waitGPUs(ctx context.Context, d *daemon.Client, wait time.Duration) ([]daemon.GPU, error) {
	deadline := time.Now().Add(wait)
	for {
		gpus, err := d.GPUs(ctx)
		if err == nil && len(gpus) > 0 {
			return gpus, nil
		}
		if err == nil {
			err = errors.New("the daemon has no GPU")
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func run(ctx context.Context, c *config) error {
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dc := daemon.New(c.socket, 10*time.Second)
	gpus, err := waitGPUs(ctx, dc, c.daemonWait)
	if err != nil {
		return fmt.Errorf("the gpuslice daemon's GPUs: %w", err)
	}
	n := &node.Node{Daemon: dc, StateRoot: c.stateRoot, DaemonStateDir: c.daemonStateDir,
		Preload: c.preload, Env: c.cdiEnv, Mounts: c.mounts}
	errc := make(chan error, 2)
	ready := make(chan struct{}, 2)
	want := 0
	if c.devicePlugin {
		want++
		dp := deviceplugin.New(deviceplugin.Options{PluginDir: c.devicePluginsDir, PodResourcesSocket: c.podResources}, n, gpus)
		go func() { errc <- dp.Run(ctx, ready) }()
	}
	if c.dra {
		want++
		go func() { errc <- runDRA(ctx, c, n, kube, gpus, ready) }()
	}
	for {
		select {
		case err := <-errc:
			return err
		case <-ready:
			if want--; want == 0 {
				// Every plugin is registered with kubelet: what cluster.sh waits for.
				logger.Info("ready")
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// registered waits until kubelet has registered the DRA plugin (it connects to the plugin's
// socket only then), or ctx ends.
func registered(ctx context.Context, h *kubeletplugin.Helper) error {
	for {
		if st := h.RegistrationStatus(); st != nil {
			if !st.PluginRegistered {
				return fmt.Errorf("kubelet refused the plugin: %s", st.Error)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func runDRA(ctx context.Context, c *config, n *node.Node, kube kubernetes.Interface, gpus []daemon.GPU, ready chan<- struct{}) error {
	opt := dra.Options{DriverName: DriverName, NodeName: c.nodeName, CDIDir: c.cdiDir}
	if c.podLabels != "" {
		opt.PodLabelKeys = strings.Split(c.podLabels, ",")
	}
	drv := dra.New(opt, n, kube, gpus)
	pluginDir := filepath.Join(c.pluginsDir, DriverName)
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		return fmt.Errorf("plugin dir: %w", err)
	}
	helper, err := kubeletplugin.Start(ctx, drv,
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.NodeName(c.nodeName),
		kubeletplugin.KubeClient(kube),
		kubeletplugin.PluginDataDirectoryPath(pluginDir),
		kubeletplugin.RegistrarDirectoryPath(c.registryDir),
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, dra.Resources(c.nodeName, gpus)); err != nil {
		return fmt.Errorf("publishing the node's GPUs: %w", err)
	}
	if err := registered(ctx, helper); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("serving", "driver", DriverName, "node", c.nodeName, "gpus", len(gpus))
	ready <- struct{}{}
	<-ctx.Done()
	return nil
}
