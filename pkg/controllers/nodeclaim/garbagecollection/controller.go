// Package garbagecollection reconciles the cloud's instances against
// NodeClaims, which is what makes a crash at any point of a launch harmless:
//
//   - An instance without a NodeClaim (its NodeClaim was deleted before the
//     launch was recorded, or a replica that lost leadership finished a launch)
//     is deleted once it is older than InstanceGracePeriod. The grace period
//     covers a NodeClaim that exists but is not yet in this process's cache; a
//     NodeClaim is always written before its instance is created, so an
//     instance whose NodeClaim is absent after the grace period is an orphan.
//   - A NodeClaim whose launched instance vanished (the cloud provider's Get
//     answers NodeClaimNotFound) is deleted, so its pods are provisioned again.
//     Get, not the List snapshot, decides, so a launch that completed after
//     List was taken is never mistaken for a vanished one; and launches younger
//     than LaunchGracePeriod (30 s, upstream's window) are left alone, since a
//     cached client may not show their instance yet. A pass that leaves such a
//     young unlisted launch schedules the next pass for the moment it comes
//     due, so a launch lost with a crashed controller is collected about 30 s
//     after it was launched rather than at the next minute-long interval.
package garbagecollection

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Name of the controller.
const Name = "nodeclaim.garbagecollection"

// Defaults.
const (
	DefaultInterval            = time.Minute
	DefaultInstanceGracePeriod = time.Minute
	DefaultLaunchGracePeriod   = 30 * time.Second
)

// Controller runs one garbage collection pass per Interval while it holds
// leadership.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      record.EventRecorder

	// Interval between passes.
	Interval time.Duration
	// InstanceGracePeriod is the minimum age of an instance without a
	// NodeClaim before it is deleted.
	InstanceGracePeriod time.Duration
	// LaunchGracePeriod is the minimum age of a launch (its Launched
	// condition) before its unlisted instance is checked for having vanished.
	LaunchGracePeriod time.Duration
}

// NewController returns the garbage collector. recorder may be nil.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) *Controller {
	return &Controller{
		kubeClient: kubeClient, cloudProvider: cloudProvider, clock: clk, recorder: recorder,
		Interval: DefaultInterval, InstanceGracePeriod: DefaultInstanceGracePeriod, LaunchGracePeriod: DefaultLaunchGracePeriod,
	}
}

// Result of one pass, for logs and tests.
type Result struct {
	// DeletedInstances are the provider IDs of orphan instances deleted.
	DeletedInstances []string
	// DeletedNodeClaims are the names of NodeClaims whose instance vanished.
	DeletedNodeClaims []string
	// RecheckAfter, when not zero, is when the youngest unlisted launch left
	// alone for its grace period comes due.
	RecheckAfter time.Duration
}

// Reconcile runs one pass.
func (c *Controller) Reconcile(ctx context.Context) (Result, error) {
	ctx = instrumented.WithController(ctx, Name)
	var res Result
	instances, err := c.cloudProvider.List(ctx)
	if err != nil {
		return res, err
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims); err != nil {
		return res, err
	}
	byName := map[string]*v1.NodeClaim{}
	byProviderID := map[string]bool{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		byName[nc.Name] = nc
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = true
		}
	}
	listed := map[string]bool{}
	var errs []error
	for _, inst := range instances {
		listed[inst.Status.ProviderID] = true
		if byName[inst.Name] != nil || byProviderID[inst.Status.ProviderID] {
			continue
		}
		if c.clock.Since(inst.CreationTimestamp.Time) < c.InstanceGracePeriod {
			continue
		}
		deleted, err := c.deleteOrphan(ctx, inst)
		if err != nil {
			errs = append(errs, err)
		} else if deleted {
			res.DeletedInstances = append(res.DeletedInstances, inst.Status.ProviderID)
		}
	}
	for name, nc := range byName {
		if nc.Status.ProviderID == "" || listed[nc.Status.ProviderID] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		launched := nc.StatusConditions().Get(v1.ConditionTypeLaunched)
		if !launched.IsTrue() {
			continue
		}
		// A launch younger than the grace period may have an instance that a
		// cached client cannot see yet; it is looked at when it comes due.
		if age := c.clock.Since(launched.LastTransitionTime.Time); age < c.LaunchGracePeriod {
			if due := c.LaunchGracePeriod - age; res.RecheckAfter == 0 || due < res.RecheckAfter {
				res.RecheckAfter = due
			}
			continue
		}
		deleted, err := c.deleteVanished(ctx, nc)
		if err != nil {
			errs = append(errs, err)
		} else if deleted {
			res.DeletedNodeClaims = append(res.DeletedNodeClaims, name)
		}
	}
	return res, errors.Join(errs...)
}

// deleteOrphan deletes an instance after confirming, past any cache, that no
// NodeClaim of its name exists.
func (c *Controller) deleteOrphan(ctx context.Context, inst *v1.NodeClaim) (bool, error) {
	err := c.kubeClient.Get(ctx, types.NamespacedName{Name: inst.Name}, &v1.NodeClaim{})
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	if err := c.cloudProvider.Delete(ctx, inst); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		return false, err
	}
	// A Node the orphan registered as is released and deleted too.
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes); err != nil {
		return true, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.ProviderID != inst.Status.ProviderID {
			continue
		}
		if len(n.Finalizers) > 0 {
			stored := n.DeepCopy()
			controllerutil.RemoveFinalizer(n, v1.TerminationFinalizer)
			if err := c.kubeClient.Patch(ctx, n, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
				return true, err
			}
		}
		if err := c.kubeClient.Delete(ctx, n); client.IgnoreNotFound(err) != nil {
			return true, err
		}
	}
	log.FromContext(ctx).Info("garbage collected instance without a nodeclaim", "providerID", inst.Status.ProviderID, "NodeClaim", inst.Name)
	return true, nil
}

// deleteVanished deletes a NodeClaim whose instance the cloud provider no
// longer knows.
func (c *Controller) deleteVanished(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	_, err := c.cloudProvider.Get(ctx, nc.Status.ProviderID)
	if err == nil {
		return false, nil
	}
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		return false, err
	}
	if err := c.kubeClient.Delete(ctx, nc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if c.recorder != nil {
		c.recorder.Eventf(nc, corev1.EventTypeWarning, "GarbageCollected", "instance %s of NodeClaim %s no longer exists", nc.Status.ProviderID, nc.Name)
	}
	metrics.CountDisrupted(nc, metrics.ReasonGarbageCollected, "", 0)
	log.FromContext(ctx).Info("garbage collected nodeclaim whose instance vanished", "NodeClaim", nc.Name, "providerID", nc.Status.ProviderID)
	return true, nil
}

// Start runs passes until ctx is done. It implements manager.Runnable.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name)
	for {
		res, err := c.Reconcile(ctx)
		if err != nil {
			logger.Error(err, "garbage collection pass failed")
		}
		wait := c.Interval
		if res.RecheckAfter > 0 && res.RecheckAfter < wait {
			// A second's slack: the launch is past its grace period then.
			wait = res.RecheckAfter + time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
		}
	}
}

// NeedLeaderElection: only the leader deletes anything.
func (c *Controller) NeedLeaderElection() bool { return true }

// Register adds the garbage collector to the manager.
func (c *Controller) Register(mgr manager.Manager) error { return mgr.Add(c) }
