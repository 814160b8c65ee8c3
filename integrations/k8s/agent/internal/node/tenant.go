// Package node is what the DRA driver and the device plugin share: making a held tenant of
// the node daemon for some containers, with its own directory, and the container edits that
// make those containers the tenant's processes; and undoing it.
package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gpuslice.io/k8s/agent/internal/cdi"
	"gpuslice.io/k8s/agent/internal/daemon"
)

// Node says where things are on the node.
type Node struct {
	Daemon         *daemon.Client
	StateRoot      string // <kind>/<id>/ under it: each tenant's directory; gpus/: the compute boards
	DaemonStateDir string // the daemon's state dir: limits/<tenant> is there
	Preload        string // libgpuslice.so on the host
	Env            []string
	Mounts         []cdi.Mount
}

// Dir is the directory of the tenant of kind ("claims", "device-plugin") and id.
func (n *Node) Dir(kind, id string) string { return filepath.Join(n.StateRoot, kind, id) }

func (n *Node) boardsDir() string { return filepath.Join(n.StateRoot, "gpus") }

// MakeDir makes a tenant's directory; the caller writes its record there before Register, so
// that an undo after a crash finds what to remove.
func (n *Node) MakeDir(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "gpus"), n.boardsDir()} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Register registers reg as a held tenant whose ledger lives in dir, and returns what its
// containers get. On error nothing stays registered (dir is the caller's to remove).
func (n *Node) Register(ctx context.Context, dir string, reg *daemon.Registration) (*cdi.Tenant, error) {
	reg.StateDir, reg.Held = dir, true
	if _, err := n.Daemon.Register(ctx, reg); err != nil {
		return nil, err
	}
	return &cdi.Tenant{Name: reg.Name, ClaimDir: dir, BoardsDir: n.boardsDir(),
		LimitsFile: filepath.Join(n.DaemonStateDir, "limits", reg.Name), Preload: n.Preload,
		Env: n.Env, Mounts: n.Mounts}, nil
}

// Remove ends tenant (when not empty) and removes its directory. A tenant whose processes
// still run is an error (the daemon's 409): the caller retries.
func (n *Node) Remove(ctx context.Context, dir, tenant string) error {
	if tenant != "" {
		if err := n.Daemon.End(ctx, tenant); err != nil {
			return fmt.Errorf("tenant %s: %w", tenant, err)
		}
	}
	return os.RemoveAll(dir)
}
