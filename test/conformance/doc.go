// Package conformance runs upstream Karpenter's own end-to-end suites
// (sigs.k8s.io/karpenter test/suites/regression, performance, disruption, dra,
// at the release hack/conformance/upstream pins) unmodified against this
// controller on the local cluster (hack/cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and KWOK).
//
// Upstream's suites are Ginkgo test binaries that reach the cluster through a
// kubeconfig and expect a KWOK-backed Karpenter holding the
// kube-system/karpenter-leader-election Lease. Build compiles the suite from the
// pinned module (with the Go toolchain upstream's go.mod asks for, fetched from
// the module proxy, cached in bin/conformance); ListSpecs asks the binary for
// its specs (a Ginkgo dry run); the tests in this package then run each spec in
// its own process, focused on its file and line, against a cluster with our
// CRDs and our controller running as a process under that Lease, and record
// PASS/FAIL/SKIP, its time, the failure and the controller's log for that spec.
//
// Only the environment is ours: no upstream test code is changed. Every kind
// the suites create or list (NodeOverlay and CapacityBuffer included) is
// served by our CRDs.
package conformance
