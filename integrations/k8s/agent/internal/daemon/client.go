// Package daemon talks to gpuslice's node daemon over its Unix socket (docs/daemon.md, "HTTP
// API"): the daemon holds every limit; the agent only registers and ends tenants and reads the
// node's GPUs. Nothing of the policy lives here.
package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Client is one daemon's socket.
type Client struct {
	socket string
	http   *http.Client
}

// GPU is one entry of GET /v1/gpus.
type GPU struct {
	Index             int    `json:"index"`
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	PCIBusID          string `json:"pci_bus_id"`
	MemoryTotalBytes  int64  `json:"memory_total_bytes"`
	ComputeCapability string `json:"compute_capability,omitempty"`
	// Sharing is the daemon's sharing setting for the GPU: "timeslice", "mps" or "mig:<layout>".
	Sharing string `json:"sharing,omitempty"`
}

// Registration is the body of POST /v1/tenants for a held tenant.
type Registration struct {
	Name          string            `json:"name"`
	StateDir      string            `json:"state_dir"`
	Held          bool              `json:"held"`
	Labels        map[string]string `json:"labels,omitempty"`
	GPU           int               `json:"gpu"`
	VRAMBytes     *int64            `json:"vram_bytes"`
	ComputePct    *float64          `json:"compute_pct"`
	ComputePolicy string            `json:"compute_policy,omitempty"` // "share" (the daemon's default) or "cap"
	Priority      string            `json:"priority,omitempty"`       // "normal" (the daemon's default), "high", "low"
}

// Tenant is the part of the daemon's tenant object the agent reads.
type Tenant struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Limits struct {
		VRAMBytes  *int64   `json:"vram_bytes"`
		ComputePct *float64 `json:"compute_pct"`
	} `json:"limits"`
}

// APIError is a reply with an error status: the daemon's one-line reason.
type APIError struct {
	Status int
	Msg    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gpuslice daemon: %s (HTTP %d)", e.Msg, e.Status)
}

// IsStatus reports whether err is the daemon's answer with that status.
func IsStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// New returns a client for the daemon at socket; each request gives up after timeout.
func New(socket string, timeout time.Duration) *Client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	return &Client{socket: socket, http: &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
	}}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gpuslice"+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gpuslice daemon at %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("gpuslice daemon at %s: reading the reply: %w", c.socket, err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return resp.StatusCode, &APIError{Status: resp.StatusCode, Msg: e.Error}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("gpuslice daemon at %s: %s %s: %w", c.socket, method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// GPUs lists the node's GPUs as the daemon sees them.
func (c *Client) GPUs(ctx context.Context) ([]GPU, error) {
	var r struct {
		GPUs []GPU `json:"gpus"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/v1/gpus", nil, &r); err != nil {
		return nil, err
	}
	return r.GPUs, nil
}

// Register registers (or registers again: the same tenant answers 200) a held tenant.
func (c *Client) Register(ctx context.Context, reg *Registration) (*Tenant, error) {
	var t Tenant
	if _, err := c.do(ctx, http.MethodPost, "/v1/tenants", reg, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Tenant reads one tenant; a missing one is an *APIError with status 404.
func (c *Client) Tenant(ctx context.Context, name string) (*Tenant, error) {
	var t Tenant
	if _, err := c.do(ctx, http.MethodGet, "/v1/tenants/"+url.PathEscape(name), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// SetLabels replaces a tenant's labels (an admin's PATCH).
func (c *Client) SetLabels(ctx context.Context, name string, labels map[string]string) error {
	body := map[string]any{"labels": labels}
	_, err := c.do(ctx, http.MethodPatch, "/v1/tenants/"+url.PathEscape(name), body, nil)
	return err
}

// End ends a tenant; one that is not there is not an error (ending is idempotent).
func (c *Client) End(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, "/v1/tenants/"+url.PathEscape(name)+"?exit=0", nil, nil)
	if IsStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}
