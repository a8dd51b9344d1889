package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fromJSONDump is the fast path for `kubectl get ... -o json` dumps (one
// object or a List): each item is decoded straight into its type, without
// the generic maps the YAML path goes through. ok is false when the file is
// not JSON, so that the caller reads it as YAML.
func fromJSONDump(path string) (*Snapshot, bool, error) {
	if path == "-" {
		return nil, false, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, true, err
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false, nil
	}
	var top struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	items := top.Items
	if top.Kind != "List" && top.Items == nil {
		items = []json.RawMessage{trimmed}
	}
	s := New("dump " + path)
	for i, item := range items {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(item, &tm); err != nil {
			return nil, true, fmt.Errorf("%s: item %d: %w", path, i+1, err)
		}
		gv, err := schema.ParseGroupVersion(tm.APIVersion)
		if err != nil {
			return nil, true, fmt.Errorf("%s: item %d: %w", path, i+1, err)
		}
		gvk := gv.WithKind(tm.Kind)
		if !planned[gvk.GroupKind()] {
			continue
		}
		typed, err := s.Store.scheme.New(gvk)
		if err != nil {
			return nil, true, fmt.Errorf("%s: item %d: %s: %w", path, i+1, gvk, err)
		}
		if err := json.Unmarshal(item, typed); err != nil {
			return nil, true, fmt.Errorf("%s: item %d (%s): %w", path, i+1, tm.Kind, err)
		}
		if err := s.Store.put(typed.(client.Object)); err != nil {
			return nil, true, err
		}
	}
	s.markUnscheduled()
	return s, true, nil
}
