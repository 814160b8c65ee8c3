package deviceplugin

import (
	"slices"
	"strings"
	"testing"

	"gpuslice.io/k8s/agent/internal/daemon"
)

func TestDeviceIDs(t *testing.T) {
	ids := DeviceIDs([]daemon.GPU{{Index: 0, MemoryTotalBytes: 81559 << 20}, {Index: 1, MemoryTotalBytes: 2*gib + 5}})
	if len(ids) != 79+2 || ids[0] != "gpu0-gib0" || ids[78] != "gpu0-gib78" || ids[80] != "gpu1-gib1" {
		t.Fatalf("%d ids: %v ... %v", len(ids), ids[:2], ids[len(ids)-2:])
	}
}

func TestGrantOf(t *testing.T) {
	tests := []struct {
		ids     []string
		gpu     int
		gib     int64
		wantErr string
	}{
		{[]string{"gpu0-gib3", "gpu0-gib1"}, 0, 2, ""},
		{[]string{"gpu2-gib0"}, 2, 1, ""},
		{[]string{"gpu0-gib0", "gpu1-gib0"}, 0, 0, "spread over GPUs 0 and 1"},
		{[]string{"bogus"}, 0, 0, `"bogus" is not one of this node's devices`},
		{nil, 0, 0, "no device"},
	}
	for _, tc := range tests {
		g, err := GrantOf(tc.ids)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("GrantOf(%v): %v, want %q", tc.ids, err, tc.wantErr)
			}
			continue
		}
		if err != nil || g.GPU != tc.gpu || g.Bytes != tc.gib*gib {
			t.Errorf("GrantOf(%v) = %+v, %v", tc.ids, g, err)
		}
	}
	a, _ := GrantOf([]string{"gpu0-gib1", "gpu0-gib0"})
	b, _ := GrantOf([]string{"gpu0-gib0", "gpu0-gib1"})
	c, _ := GrantOf([]string{"gpu0-gib0", "gpu0-gib2"})
	if a.TenantName() != b.TenantName() || a.TenantName() == c.TenantName() || len(a.TenantName()) > 63 {
		t.Errorf("tenant names %s %s %s", a.TenantName(), b.TenantName(), c.TenantName())
	}
}

func TestPreferred(t *testing.T) {
	avail := []string{"gpu0-gib0", "gpu0-gib1", "gpu0-gib2", "gpu1-gib0", "gpu1-gib1"}
	tests := []struct {
		must []string
		size int
		want []string
	}{
		{nil, 2, []string{"gpu1-gib0", "gpu1-gib1"}}, // the fuller GPU that fits
		{nil, 3, []string{"gpu0-gib0", "gpu0-gib1", "gpu0-gib2"}},
		{[]string{"gpu0-gib2"}, 2, []string{"gpu0-gib2", "gpu0-gib0"}},
		{nil, 4, nil},
	}
	for _, tc := range tests {
		if got := Preferred(avail, tc.must, tc.size); !slices.Equal(got, tc.want) {
			t.Errorf("Preferred(%v, %d) = %v, want %v", tc.must, tc.size, got, tc.want)
		}
	}
}
