// Package e2e holds end-to-end tests against the local cluster (hack/cluster):
// real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.
//
// Every test starts its own cluster (fresh ports and state directory) and its
// own Karpenter, so tests share nothing and run in parallel (t.Parallel; go
// test runs GOMAXPROCS of them at once). They spend most of their time waiting
// on controllers' timers, which is why running two at a time on two cores
// roughly halves the package's wall time without starving either.
package e2e
