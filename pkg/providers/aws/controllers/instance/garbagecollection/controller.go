// Package garbagecollection terminates the cluster's Karpenter instances
// that no NodeClaim names, as upstream's instance garbage collection does.
//
// Karpenter writes a NodeClaim before it calls CreateFleet and records the
// instance in status.providerID afterwards. A crash (or a lost leadership)
// between the two leaves an instance nobody tracks: the restarted
// controller launches again for the NodeClaim, and the first instance would
// run, and be paid for, forever. Every pass lists the instances tagged for
// this cluster and terminates those older than GracePeriod (upstream's 30
// seconds, the time a launch takes to be recorded) whose provider ID no
// NodeClaim carries; a Node the orphan registered as is deleted too, so the
// scheduler stops using it at once.
//
// The reverse (a NodeClaim whose instance vanished) is the core's NodeClaim
// garbage collection, not this package.
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
)

// Name of the controller, as upstream's.
const Name = "instance.garbagecollection"

// Upstream's figures.
const (
	// GracePeriod is the age below which an untracked instance is left
	// alone: its NodeClaim's status write may still be on its way.
	GracePeriod = 30 * time.Second
	// FastInterval is the pause between the first FastPasses passes after
	// a start, when orphans of a crash are most likely.
	FastInterval = 10 * time.Second
	FastPasses   = 20
	// Interval is the pause between later passes.
	Interval = 2 * time.Minute
)

// Controller collects orphan instances while it holds leadership.
type Controller struct {
	kubeClient client.Client
	instances  *instance.Provider
	clock      clock.Clock
	successes  int
}

// NewController returns the garbage collector.
func NewController(kubeClient client.Client, instances *instance.Provider, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, instances: instances, clock: clk}
}

// Name of the controller.
func (c *Controller) Name() string { return Name }

// Reconcile runs one pass and returns the IDs of the instances it
// terminated, and the pause before the next pass.
func (c *Controller) Reconcile(ctx context.Context) ([]string, time.Duration, error) {
	// Instances first: an instance launched after this list cannot be
	// judged an orphan by a NodeClaim list that is older than it.
	instances, err := c.instances.List(ctx)
	if err != nil {
		return nil, c.next(false), fmt.Errorf("listing instances: %w", err)
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims); err != nil {
		return nil, c.next(false), fmt.Errorf("listing NodeClaims: %w", err)
	}
	tracked := make(map[string]bool, len(claims.Items))
	for i := range claims.Items {
		if id, err := instance.ParseProviderID(claims.Items[i].Status.ProviderID); err == nil {
			tracked[id] = true
		}
	}
	var orphans []*instance.Instance
	for _, inst := range instances {
		// One already shutting down was collected by an earlier pass.
		if inst.State == "shutting-down" {
			continue
		}
		if !tracked[inst.ID] && c.clock.Since(inst.LaunchTime) > GracePeriod {
			orphans = append(orphans, inst)
		}
	}
	if len(orphans) == 0 {
		return nil, c.next(true), nil
	}
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes); err != nil {
		return nil, c.next(false), fmt.Errorf("listing Nodes: %w", err)
	}
	var deleted []string
	var errs []error
	for _, inst := range orphans {
		if err := c.collect(ctx, inst, nodes.Items); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, inst.ID)
	}
	err = errors.Join(errs...)
	return deleted, c.next(err == nil), err
}

// collect terminates one orphan and deletes its Node.
func (c *Controller) collect(ctx context.Context, inst *instance.Instance, nodes []corev1.Node) error {
	if err := c.instances.Delete(ctx, inst.ID); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		return fmt.Errorf("terminating orphan instance %s: %w", inst.ID, err)
	}
	log.FromContext(ctx).Info("garbage collected an instance no nodeclaim tracks", "instance", inst.ID,
		"nodeclaim-tag", inst.Tags[awsv1.TagNodeClaim], "launched", inst.LaunchTime)
	for i := range nodes {
		n := &nodes[i]
		if id, err := instance.ParseProviderID(n.Spec.ProviderID); err != nil || id != inst.ID {
			continue
		}
		if err := c.kubeClient.Delete(ctx, n); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Node %s of orphan instance %s: %w", n.Name, inst.ID, err)
		}
		log.FromContext(ctx).Info("garbage collected the node of an orphan instance", "Node", n.Name, "instance", inst.ID)
	}
	return nil
}

// next is the pause before the next pass: short while the controller is
// young, long after that.
func (c *Controller) next(succeeded bool) time.Duration {
	if succeeded {
		c.successes++
	}
	if c.successes <= FastPasses {
		return FastInterval
	}
	return Interval
}

// Start runs passes until ctx is done. It implements manager.Runnable.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name)
	ctx = log.IntoContext(ctx, logger)
	for {
		_, pause, err := c.Reconcile(ctx)
		if err != nil {
			logger.Error(err, "instance garbage collection pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(pause):
		}
	}
}

// NeedLeaderElection: only the leader terminates anything.
func (c *Controller) NeedLeaderElection() bool { return true }

// Register adds the garbage collector to the manager.
func (c *Controller) Register(mgr manager.Manager) error { return mgr.Add(c) }
