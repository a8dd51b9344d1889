package operator

import (
	"context"
	"net"
	"os"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// PodNameEnv names the variable (set from the Downward API, metadata.name)
// that gives the process a leader identity that survives its own restarts.
const PodNameEnv = "POD_NAME"

// leaderLock returns the Lease lock with the pod's name as identity when
// POD_NAME is set, nil otherwise (controller-runtime's default identity,
// hostname plus a random UUID).
//
// Why: a replica that cannot renew its Lease for the renew deadline (an API
// server outage of 10 s) exits, and the kubelet restarts its container. With
// a random identity the new process finds a Lease held by a stranger and
// waits the whole lease duration (15 s) after the API returns before it
// leads; with the pod's name it recognises its own Lease and leads at once.
// Two live processes never share a pod name, so the lock stays exclusive.
func leaderLock(cfg *rest.Config, namespace, name string) (resourcelock.Interface, error) {
	id := os.Getenv(PodNameEnv)
	if id == "" {
		return nil, nil
	}
	cfg = rest.CopyConfig(cfg)
	// As controller-runtime does: a hung request must not outlive half the
	// renew deadline (10 s), or one such request costs the leadership.
	cfg.Timeout = 5 * time.Second
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, core, coord,
		resourcelock.ResourceLockConfig{Identity: id})
}

// OwnConnection gives the clients built from cfg a TCP connection of their own:
// the leader election's (here) and the provisioner's NodeClaim creates
// (pkg/controllers).
//
// Why: client-go shares one transport (one HTTP/2 connection) among all clients
// built from equal TLS settings, so the Lease renewal was multiplexed with the
// controllers' traffic: lists of tens of thousands of pods and the watch
// streams of a large fleet. Behind them on a busy API server a renewal missed
// its 5 s timeout and the process lost its leadership (BenchmarkScaleFleet,
// 1,000 nodes). A config with its own Dial is never shared from the cache.
func OwnConnection(cfg *rest.Config) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		return d.DialContext(ctx, network, address)
	}
}
