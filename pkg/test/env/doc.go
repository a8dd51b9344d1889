// The binaries come from hack/cluster (a separate Go module that compiles etcd and
// Kubernetes from the Go module proxy); see the README for `make cluster-bins`.
package env
