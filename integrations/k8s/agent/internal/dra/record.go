package dra

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// record is what the agent keeps of a prepared claim, in the claim's directory, for
// UnprepareResourceClaims: kubelet then gives only the claim's UID, namespace and name, and
// the agent that prepared it may have been restarted since.
type record struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
}

const recordFile = "claim.json"

func writeRecord(dir string, r *record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+recordFile)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("claim record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, recordFile)); err != nil {
		return fmt.Errorf("claim record: %w", err)
	}
	return nil
}

// readRecord returns nil, nil when the claim was never prepared here (or is unprepared).
func readRecord(dir string) (*record, error) {
	data, err := os.ReadFile(filepath.Join(dir, recordFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim record: %w", err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("claim record %s: %w", filepath.Join(dir, recordFile), err)
	}
	return &r, nil
}
