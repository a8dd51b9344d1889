// Package e2e holds end-to-end tests against the local cluster (hack/cluster):
// real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.
package e2e
