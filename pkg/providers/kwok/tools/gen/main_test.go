package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed catalog must be exactly what the generator writes, so that
// editing the generator without regenerating fails here.
func TestCommittedCatalogIsFresh(t *testing.T) {
	want, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../instance_types.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("pkg/providers/kwok/instance_types.json is stale: run `go generate ./pkg/providers/kwok`")
	}
}
