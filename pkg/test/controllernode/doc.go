// Package controllernode is the kubelet of the local cluster's control node:
// the node upstream's chart expects its controller pods on (tainted
// CriticalAddonsOnly, as a kind cluster's control plane). It runs the pods the
// scheduler binds to it from the controller image under runc, as a container
// runtime would (the image unpacked from `make image`'s OCI layout, the pod's
// user, read-only root filesystem, dropped capabilities, emptyDir volumes and
// projected ServiceAccount token), or, where no OCI runtime is available, as
// local processes of the controller binary with the same environment and
// token. `make run`, the conformance harness and the image tests use it.
package controllernode
