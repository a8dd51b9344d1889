package lifecycle

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Launch creates the instance of a NodeClaim through the cloud provider.
type Launch struct {
	kubeClient    client.Client
	clock         clock.Clock
	cloudProvider cloudprovider.CloudProvider
	recorder      record.EventRecorder
	// cache remembers launches whose status write may not have reached the
	// informer yet, so a stale read does not call Create again.
	cache *launchCache
}

// Reconcile launches the instance unless the NodeClaim is Launched.
func (l *Launch) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	if conditions(nc, l.clock).Get(v1.ConditionTypeLaunched).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	created, ok := l.cache.get(nc.UID)
	if !ok {
		var err error
		created, err = l.cloudProvider.Create(ctx, nc)
		if err != nil {
			return l.failed(ctx, nc, err)
		}
		l.cache.put(nc.UID, created)
	}
	populate(nc, created)
	conditions(nc, l.clock).SetTrue(v1.ConditionTypeLaunched)
	log.FromContext(ctx).V(1).Info("launched nodeclaim", "NodeClaim", nc.Name, "providerID", nc.Status.ProviderID,
		"instance-type", nc.Labels[corev1.LabelInstanceTypeStable], "zone", nc.Labels[corev1.LabelTopologyZone],
		"capacity-type", nc.Labels[v1.CapacityTypeLabelKey])
	return reconcile.Result{}, false, nil
}

func (l *Launch) failed(ctx context.Context, nc *v1.NodeClaim, err error) (reconcile.Result, bool, error) {
	var createErr *cloudprovider.CreateError
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		// Nothing compatible can be had: delete the NodeClaim so that its pods
		// go back to the provisioner, which now picks something else.
		l.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonInsufficientCapacity, "NodeClaim %s event: %s", nc.Name, truncate(err.Error()))
		if err := l.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, false, err
		}
		metrics.CountDisrupted(nc, metrics.ReasonInsufficientCapacity, "", 0)
		log.FromContext(ctx).Info("deleted nodeclaim: insufficient capacity", "NodeClaim", nc.Name, "error", err.Error())
		return reconcile.Result{}, true, nil
	case cloudprovider.IsNodeClassNotReadyError(err):
		// The NodeClass cannot launch anything: the NodeClaim is deleted at
		// once, as upstream does, and its pods go back to the provisioner,
		// which launches from no NodePool whose NodeClass is not ready.
		log.FromContext(ctx).Error(err, "failed launching nodeclaim", "NodeClaim", nc.Name)
		if err := l.kubeClient.Delete(ctx, nc); err != nil {
			return reconcile.Result{}, apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		metrics.CountDisrupted(nc, metrics.ReasonNodeClassNotReady, "", 0)
		return reconcile.Result{}, true, nil
	case errors.As(err, &createErr):
		reason := createErr.ConditionReason
		if reason == "" {
			reason = "LaunchFailed"
		}
		msg := createErr.ConditionMessage
		if msg == "" {
			msg = err.Error()
		}
		conditions(nc, l.clock).SetFalse(v1.ConditionTypeLaunched, reason, truncate(msg))
	default:
		conditions(nc, l.clock).SetFalse(v1.ConditionTypeLaunched, "LaunchFailed", truncate(err.Error()))
	}
	l.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonLaunchFailed, "launching NodeClaim %s: %s", nc.Name, truncate(err.Error()))
	return reconcile.Result{}, false, err
}

// populate copies what the instance resolved into the NodeClaim: its labels
// (instance type, zone, capacity type, ...) over the requested ones, and the
// provider ID, image and resources.
func populate(nc, created *v1.NodeClaim) {
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range created.Labels {
		switch k {
		case v1.NodeRegisteredLabelKey, v1.NodeInitializedLabelKey:
			continue
		}
		nc.Labels[k] = v
	}
	for k, v := range created.Annotations {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		if _, ok := nc.Annotations[k]; !ok {
			nc.Annotations[k] = v
		}
	}
	nc.Status.ProviderID = created.Status.ProviderID
	nc.Status.ImageID = created.Status.ImageID
	nc.Status.Capacity = created.Status.Capacity.DeepCopy()
	nc.Status.Allocatable = created.Status.Allocatable.DeepCopy()
}

// truncate keeps condition messages and events readable.
func truncate(s string) string {
	const max = 1000
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// launchCache maps NodeClaim UIDs to their launch result for the lifetime of
// the NodeClaim in this process.
type launchCache struct {
	mu sync.Mutex
	m  map[types.UID]*v1.NodeClaim
}

func newLaunchCache() *launchCache { return &launchCache{m: map[types.UID]*v1.NodeClaim{}} }

func (c *launchCache) get(uid types.UID) (*v1.NodeClaim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.m[uid]
	return nc, ok
}

func (c *launchCache) put(uid types.UID, nc *v1.NodeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[uid] = nc
}

func (c *launchCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}
