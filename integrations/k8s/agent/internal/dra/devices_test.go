package dra

import (
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"gpuslice.io/k8s/agent/internal/daemon"
)

func TestSharingAttributes(t *testing.T) {
	long := "mig:" + strings.TrimSpace(strings.Repeat("1g.10gb@0 ", 7))
	tests := []struct {
		sharing string
		want    map[resourceapi.QualifiedName]string
	}{
		{"", map[resourceapi.QualifiedName]string{}},
		{"timeslice", map[resourceapi.QualifiedName]string{"sharing": "timeslice"}},
		{"mps", map[resourceapi.QualifiedName]string{"sharing": "mps"}},
		{"mig:1g.10gb@0 1g.10gb@1 3g.40gb@4",
			map[resourceapi.QualifiedName]string{"sharing": "mig", "migLayout": "1g.10gb@0 1g.10gb@1 3g.40gb@4"}},
		// Past an attribute's 64 characters the layout is left out, never cut.
		{long, map[resourceapi.QualifiedName]string{"sharing": "mig"}},
	}
	for _, tc := range tests {
		if got := SharingAttributes(tc.sharing); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SharingAttributes(%q) = %v, want %v", tc.sharing, got, tc.want)
		}
	}
}

func TestDevicesCarryTheSharingMode(t *testing.T) {
	gpus := []daemon.GPU{
		{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", MemoryTotalBytes: 80 << 30, Sharing: "mps"},
		{Index: 1, UUID: "GPU-b", Name: "NVIDIA H100 80GB HBM3", MemoryTotalBytes: 80 << 30,
			Sharing: "mig:3g.40gb@0 3g.40gb@4"},
		{Index: 2, UUID: "GPU-c", Name: "Tesla T4", MemoryTotalBytes: 15 << 30},
	}
	devs := Devices(gpus)
	str := func(d resourceapi.Device, name resourceapi.QualifiedName) string {
		if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
			return *a.StringValue
		}
		return "<none>"
	}
	tests := []struct {
		dev             int
		sharing, layout string
	}{
		{0, "mps", "<none>"},
		{1, "mig", "3g.40gb@0 3g.40gb@4"},
		{2, "<none>", "<none>"},
	}
	for _, tc := range tests {
		if got := str(devs[tc.dev], "sharing"); got != tc.sharing {
			t.Errorf("device %d sharing = %q, want %q", tc.dev, got, tc.sharing)
		}
		if got := str(devs[tc.dev], "migLayout"); got != tc.layout {
			t.Errorf("device %d migLayout = %q, want %q", tc.dev, got, tc.layout)
		}
	}
}
