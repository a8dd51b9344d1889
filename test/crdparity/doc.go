// Package crdparity is a differential test of this project's CRDs against
// the ones upstream ships (AWS provider v1.15.2, pkg/apis/crds: NodePool,
// NodeClaim, EC2NodeClass, NodeOverlay and CapacityBuffer).
//
// It starts two real kube-apiservers (pkg/test/env), installs upstream's
// CRDs in one and ours (crds.CRDs(), what the chart ships) in the other, and
// sends every generated manifest to both as a server-side dry-run create, or
// a dry-run update of an object created for real. The manifests are a few
// valid bases per kind, mutated by walking upstream's openAPIV3Schema (each
// field deleted, emptied, given the wrong type, boundary values, enum
// look-alikes, pattern near-misses, restricted map keys) plus hand-written
// cases for the rules users trip over (requirements, taints, budgets, static
// NodePools, selector terms, AMI aliases, tags, kubelet, role and instance
// profile) and for the transition rules.
//
// What it proves, for every generated input: our API server accepts exactly
// what upstream's accepts, and what it accepts comes back with the same
// defaults. Error messages are not compared (ours may word them better). It
// also compares what a verdict cannot show: each served version's printer
// columns and subresources, and the list and map types of every field path.
// A kind missing from our CRDs is reported by name and the others are still
// compared. Run it with `go test ./test/crdparity -v`; CRDPARITY_REPORT=FILE
// also writes the agreement table and every disagreement to FILE;
// CRDPARITY_SELF=1 installs upstream's CRDs on both servers instead, a check
// of the harness itself (every case must agree, defaults included).
package crdparity
