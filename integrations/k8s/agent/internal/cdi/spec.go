// Package cdi writes the CDI spec that makes a claim's containers gpuslice tenants: the
// interposer preloaded, the tenant's name and state dir in the environment, and the mounts
// that put its ledger, its read-only limits file and the interposer inside the container.
// The spec types are the CDI project's own (tags.cncf.io/container-device-interface/specs-go).
package cdi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Vendor and Class make the CDI kind of every device the agent writes: gpuslice.io/claim.
const (
	Vendor  = "gpuslice.io"
	Class   = "claim"
	Version = "0.6.0"
)

// Inside the container: where the tenant's files are put.
const (
	TenantDir   = "/run/gpuslice-tenant"             // GPUSLICE_STATE_DIR: the claim's ledger
	DaemonDir   = "/run/gpuslice"                    // the daemon's dir as the interposer sees it
	PreloadPath = "/usr/lib/gpuslice/libgpuslice.so" // the interposer
)

// Mount is a bind mount from the host into the container.
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// ParseMount reads HOST:CONTAINER[:ro].
func ParseMount(s string) (Mount, error) {
	p := strings.Split(s, ":")
	if len(p) < 2 || len(p) > 3 || !filepath.IsAbs(p[0]) || !filepath.IsAbs(p[1]) || (len(p) == 3 && p[2] != "ro") {
		return Mount{}, fmt.Errorf("mount %q: want /host/path:/container/path[:ro]", s)
	}
	return Mount{Host: p[0], Container: p[1], ReadOnly: len(p) == 3}, nil
}

// Tenant is what one claim's containers get.
type Tenant struct {
	ClaimUID   string
	Name       string // the daemon's tenant name
	ClaimDir   string // host: the claim's state dir, holding tenants/<Name>
	BoardsDir  string // host: the node's compute boards (gpus/<uuid>), shared by every claim
	LimitsFile string // host: <daemon state dir>/limits/<Name>
	Preload    string // host: libgpuslice.so
	Env        []string
	Mounts     []Mount // more: the driver's libraries where no container toolkit mounts them
}

// DeviceID is the CDI device ID kubelet hands the runtime for the claim.
func DeviceID(claimUID string) string { return Vendor + "/" + Class + "=" + claimUID }

// Path is the spec file of a claim in dir.
func Path(dir, claimUID string) string {
	return filepath.Join(dir, Vendor+"-"+Class+"_"+claimUID+".json")
}

func bind(m Mount) *specs.Mount {
	opts := []string{"rbind", "nosuid", "nodev"}
	if m.ReadOnly {
		opts = append(opts, "ro")
	}
	return &specs.Mount{HostPath: m.Host, ContainerPath: m.Container, Type: "bind", Options: opts}
}

// Edits are what t's containers get: the environment and the bind mounts. The CDI spec holds
// them for a DRA claim; the device plugin returns them from Allocate.
func Edits(t *Tenant) ([]string, []Mount) {
	env := append([]string{
		"LD_PRELOAD=" + PreloadPath,
		"GPUSLICE_TENANT=" + t.Name,
		"GPUSLICE_STATE_DIR=" + TenantDir,
		// Only its directory matters: the interposer reads limits/<tenant> beside the socket.
		// The socket itself is not mounted; a pod does not talk to the daemon.
		"GPUSLICE_SOCKET=" + DaemonDir + "/gpuslice.sock",
	}, t.Env...)
	mounts := append([]Mount{
		{Host: t.ClaimDir, Container: TenantDir},
		// The tenants of a GPU take turns on its compute board, in <state dir>/gpus: one for
		// the node, not one per claim (docs/compute-shares.md).
		{Host: t.BoardsDir, Container: TenantDir + "/gpus"},
		{Host: t.LimitsFile, Container: DaemonDir + "/limits/" + t.Name, ReadOnly: true},
		{Host: t.Preload, Container: PreloadPath, ReadOnly: true},
	}, t.Mounts...)
	return env, mounts
}

// Spec is the CDI spec of t.
func Spec(t *Tenant) *specs.Spec {
	env, mounts := Edits(t)
	sm := make([]*specs.Mount, 0, len(mounts))
	for _, m := range mounts {
		sm = append(sm, bind(m))
	}
	return &specs.Spec{
		Version: Version,
		Kind:    Vendor + "/" + Class,
		Devices: []specs.Device{{
			Name:           t.ClaimUID,
			ContainerEdits: specs.ContainerEdits{Env: env, Mounts: sm},
		}},
	}
}

// Write writes t's spec into dir atomically (a runtime never reads half a spec).
func Write(dir string, t *Tenant) error {
	data, err := json.MarshalIndent(Spec(t), "", "  ")
	if err != nil {
		return fmt.Errorf("CDI spec for claim %s: %w", t.ClaimUID, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("CDI spec dir: %w", err)
	}
	path := Path(dir, t.ClaimUID)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("CDI spec for claim %s: %w", t.ClaimUID, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("CDI spec %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("CDI spec %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("CDI spec %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("CDI spec %s: %w", path, err)
	}
	return nil
}

// Remove removes a claim's spec; one that is not there is not an error.
func Remove(dir, claimUID string) error {
	if err := os.Remove(Path(dir, claimUID)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("CDI spec for claim %s: %w", claimUID, err)
	}
	return nil
}
