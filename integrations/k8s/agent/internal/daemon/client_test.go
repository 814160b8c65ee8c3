package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve answers on a Unix socket as the daemon's API would, from a table of replies.
func serve(t *testing.T, replies map[string]func(w http.ResponseWriter, r *http.Request)) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "gpuslice.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := replies[r.Method+" "+r.URL.Path]; ok {
			h(w, r)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no such route"}`))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return New(sock, 5*time.Second)
}

func reply(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestClient(t *testing.T) {
	var got Registration
	c := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"GET /v1/gpus": reply(200, `{"gpus":[{"index":0,"uuid":"GPU-1","name":"H100","memory_total_bytes":85520809984,"compute_capability":"9.0"}]}`),
		"POST /v1/tenants": func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewDecoder(r.Body).Decode(&got)
			reply(201, `{"name":"k8s.ns.c","labels":{"pod":"p"}}`)(w, r)
		},
		"DELETE /v1/tenants/busy":  reply(409, `{"error":"tenant 'busy' still has 1 running process: it ends when they do"}`),
		"DELETE /v1/tenants/gone":  reply(404, `{"error":"no tenant 'gone'"}`),
		"DELETE /v1/tenants/fine":  reply(204, ``),
		"GET /v1/tenants/k8s.ns.c": reply(500, `not json`),
	})
	ctx := context.Background()
	gpus, err := c.GPUs(ctx)
	if err != nil || len(gpus) != 1 || gpus[0].MemoryTotalBytes != 85520809984 || gpus[0].ComputeCapability != "9.0" {
		t.Fatalf("GPUs: %+v, %v", gpus, err)
	}
	v := int64(20 << 30)
	tn, err := c.Register(ctx, &Registration{Name: "k8s.ns.c", StateDir: "/x", Held: true, VRAMBytes: &v})
	if err != nil || tn.Labels["pod"] != "p" {
		t.Fatalf("Register: %+v, %v", tn, err)
	}
	if !got.Held || got.StateDir != "/x" || got.VRAMBytes == nil || *got.VRAMBytes != v || got.ComputePct != nil {
		t.Fatalf("the daemon got %+v", got)
	}
	tests := []struct {
		name   string
		status int // 0: no error
		msg    string
	}{
		{"fine", 0, ""},
		{"gone", 0, ""}, // ending what is not there is done already
		{"busy", http.StatusConflict, "still has 1 running process"},
	}
	for _, tc := range tests {
		err := c.End(ctx, tc.name)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("End(%s): %v", tc.name, err)
			}
			continue
		}
		if !IsStatus(err, tc.status) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("End(%s): %v, want HTTP %d with %q on one line", tc.name, err, tc.status, tc.msg)
		}
	}
	if _, err := c.Tenant(ctx, "k8s.ns.c"); !IsStatus(err, 500) || !strings.Contains(err.Error(), "Internal Server Error") {
		t.Errorf("a reply that is not the API's: %v", err)
	}
	if _, err := New(filepath.Join(t.TempDir(), "none.sock"), time.Second).GPUs(ctx); err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("no daemon: %v", err)
	}
}
