package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" for none
	}{
		{"defaults", []string{"--node-name=n1"}, ""},
		{"device plugin only", []string{"--node-name=n1", "--dra=false", "--device-plugin"}, ""},
		{"mounts and env", []string{"--node-name=n1", "--cdi-mount=/a:/b:ro", "--cdi-env=K=V"}, ""},
		{"no node", nil, "--node-name (or $NODE_NAME) is required"},
		{"unknown flag", []string{"--node-name=n1", "--bogus"}, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"--node-name=n1", "extra"}, `unexpected argument "extra"`},
		{"bad env", []string{"--node-name=n1", "--cdi-env=NOEQUALS"}, `--cdi-env "NOEQUALS": want KEY=VALUE`},
		{"relative mount", []string{"--node-name=n1", "--cdi-mount=a:/b"}, `--cdi-mount: mount "a:/b"`},
		{"bad mount option", []string{"--node-name=n1", "--cdi-mount=/a:/b:rw"}, `--cdi-mount: mount "/a:/b:rw"`},
		{"empty label key", []string{"--node-name=n1", "--pod-labels=app,,team"}, `--pod-labels "app,,team"`},
		{"bad duration", []string{"--node-name=n1", "--daemon-wait=soon"}, `invalid value "soon" for flag -daemon-wait`},
		{"nothing to serve", []string{"--node-name=n1", "--dra=false"}, "nothing to serve"},
	}
	t.Setenv("NODE_NAME", "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.daemonStateDir != "/run/gpuslice" {
					t.Errorf("daemon state dir %q, want the socket's directory", c.daemonStateDir)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.wantErr)
			}
			if errors.Is(err, flag.ErrHelp) {
				t.Fatalf("a bad flag is not -h")
			}
		})
	}
	c, err := parseFlags([]string{"--node-name=n1", "--cdi-mount=/a:/b:ro"})
	if err != nil || len(c.mounts) != 1 || !c.mounts[0].ReadOnly || c.mounts[0].Container != "/b" {
		t.Fatalf("mounts %+v, %v", c, err)
	}
}
