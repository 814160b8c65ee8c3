package cdi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

func TestWriteAndRemove(t *testing.T) {
	dir := t.TempDir()
	tn := &Tenant{ClaimUID: "u-1", Name: "k8s.ns.c", ClaimDir: "/var/lib/gpuslice-k8s/claims/u-1", BoardsDir: "/var/lib/gpuslice-k8s/gpus",
		LimitsFile: "/run/gpuslice/limits/k8s.ns.c", Preload: "/opt/gs/libgpuslice.so",
		Env: []string{"GPUSLICE_SIM=h100-80gb"}, Mounts: []Mount{{Host: "/opt/gs/sim", Container: "/opt/sim", ReadOnly: true}}}
	if err := Write(dir, tn); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(Path(dir, "u-1"))
	if err != nil {
		t.Fatal(err)
	}
	var got specs.Spec
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "gpuslice.io/claim" || len(got.Devices) != 1 || got.Devices[0].Name != "u-1" {
		t.Fatalf("spec %s", data)
	}
	edits := got.Devices[0].ContainerEdits
	for _, want := range []string{"LD_PRELOAD=" + PreloadPath, "GPUSLICE_TENANT=k8s.ns.c", "GPUSLICE_STATE_DIR=" + TenantDir, "GPUSLICE_SIM=h100-80gb"} {
		if !slices.Contains(edits.Env, want) {
			t.Errorf("env %v lacks %s", edits.Env, want)
		}
	}
	mounts := map[string]*specs.Mount{}
	for _, m := range edits.Mounts {
		mounts[m.ContainerPath] = m
	}
	if m := mounts[DaemonDir+"/limits/k8s.ns.c"]; m == nil || m.HostPath != tn.LimitsFile || !slices.Contains(m.Options, "ro") {
		t.Errorf("limits file mount %+v", m)
	}
	if m := mounts[TenantDir]; m == nil || m.HostPath != tn.ClaimDir || slices.Contains(m.Options, "ro") {
		t.Errorf("ledger dir mount %+v", m)
	}
	if m := mounts[TenantDir+"/gpus"]; m == nil || m.HostPath != tn.BoardsDir {
		t.Errorf("compute boards mount %+v", m)
	}
	if m := mounts["/opt/sim"]; m == nil || !slices.Contains(m.Options, "ro") {
		t.Errorf("extra mount %+v", m)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if DeviceID("u-1") != "gpuslice.io/claim=u-1" {
		t.Errorf("device id %s", DeviceID("u-1"))
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := Remove(dir, "u-1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(Path(dir, "u-1")); !os.IsNotExist(err) {
		t.Fatalf("spec still there: %v", err)
	}
}

func TestParseMount(t *testing.T) {
	tests := []struct {
		in      string
		want    Mount
		wantErr bool
	}{
		{"/a:/b", Mount{Host: "/a", Container: "/b"}, false},
		{"/a:/b:ro", Mount{Host: "/a", Container: "/b", ReadOnly: true}, false},
		{"a:/b", Mount{}, true},
		{"/a:/b:rw", Mount{}, true},
		{"/a", Mount{}, true},
	}
	for _, tc := range tests {
		got, err := ParseMount(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseMount(%q) = %+v, %v", tc.in, got, err)
		}
	}
}
