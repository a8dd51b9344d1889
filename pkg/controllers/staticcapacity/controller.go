// Package staticcapacity keeps static NodePools (spec.replicas set, with the
// StaticCapacity feature gate on) at their replica count, as upstream's
// static.provisioning and static.deprovisioning controllers do:
//
//   - too few NodeClaims: it creates the missing ones for any instance type the
//     pool admits, cheapest first, never past limits.nodes (counting every
//     NodeClaim of the pool, those being deleted too);
//   - too many: it deletes the surplus, NodeClaims not launched yet first, then
//     empty nodes (daemon pods only), then the nodes whose pods cost least to
//     move, and a node with an active karpenter.sh/do-not-disrupt pod last.
//
// Nodes of a static NodePool are left alone by consolidation and emptiness
// (their count is the user's), and dynamic provisioning never launches for
// them; drift and expiration replace them like any node.
package staticcapacity

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/donotdisrupt"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Creator creates NodeClaims of a static NodePool (the provisioner).
type Creator interface {
	CreateStatic(ctx context.Context, np *v1.NodePool, n int) ([]*v1.NodeClaim, error)
}

// Controller reconciles static NodePools.
type Controller struct {
	kube    client.Client
	cluster *state.Cluster
	creator Creator
	clock   clock.Clock
}

// NewController returns the controller.
func NewController(kube client.Client, cluster *state.Cluster, creator Creator, clk clock.Clock) *Controller {
	return &Controller{kube: kube, cluster: cluster, creator: creator, clock: clk}
}

// Reconcile brings one static NodePool to its replica count.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if np.Spec.Replicas == nil || np.DeletionTimestamp != nil || !np.StatusConditions().Root().IsTrue() {
		return reconcile.Result{}, nil
	}
	// No decision on a partial view: a NodeClaim missing from state would be launched again.
	if synced, err := c.cluster.Synced(ctx); err != nil || !synced {
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	step := Decide(np, c.cluster.Nodes(), c.clock.Now())
	logger := log.FromContext(ctx).WithValues("NodePool", np.Name, "current", step.Active, "desired", *np.Spec.Replicas)
	switch {
	case step.AtLimit:
		logger.Info("static nodepool is at its node limit (limits.nodes)", "nodeclaims", step.All)
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	case step.Launch > 0:
		logger.Info("creating nodeclaims to reach the nodepool's replicas", "count", step.Launch)
		if _, err := c.creator.CreateStatic(ctx, np, step.Launch); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating nodeclaims of static nodepool %s: %w", np.Name, err)
		}
	case len(step.Remove) > 0:
		logger.Info("deleting nodeclaims above the nodepool's replicas", "count", len(step.Remove))
		for _, sn := range step.Remove {
			if err := c.kube.Delete(ctx, sn.NodeClaim); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of static nodepool %s: %w", sn.NodeClaim.Name, np.Name, err)
			}
		}
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// Step is what a static NodePool needs now to hold spec.replicas NodeClaims.
type Step struct {
	// Active counts its NodeClaims not on their way out; All, every one.
	Active, All int
	// Launch is how many NodeClaims to create; AtLimit is set when
	// limits.nodes holds back every one that is missing.
	Launch  int
	AtLimit bool
	// Remove are the nodes above the replicas, in the order to remove them.
	Remove []*state.StateNode
}

// Decide is the static NodePool np's step over the cluster's nodes: NodeClaims
// to create up to spec.replicas (within limits.nodes, counting every NodeClaim
// of the pool, leaving ones included), or the surplus to delete. A node
// disruption is replacing (marked for deletion: its replacement is launching)
// is on its way out like a deleted one; its replacement counts instead.
func Decide(np *v1.NodePool, nodes []*state.StateNode, now time.Time) Step {
	var step Step
	if np.Spec.Replicas == nil {
		return step
	}
	var active []*state.StateNode
	for _, sn := range nodes {
		if sn.NodeClaim == nil || sn.NodePool() != np.Name {
			continue
		}
		step.All++
		if sn.NodeClaim.DeletionTimestamp == nil && !sn.MarkedForDeletion() {
			active = append(active, sn)
		}
	}
	step.Active = len(active)
	desired := int(*np.Spec.Replicas)
	switch {
	case len(active) < desired:
		n := desired - len(active)
		if limit, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok {
			n = min(n, int(limit.Value())-step.All)
		}
		if n <= 0 {
			step.AtLimit = true
			return step
		}
		step.Launch = n
	case len(active) > desired:
		step.Remove = Surplus(active, len(active)-desired, now)
	}
	return step
}

// Surplus picks the n nodes of a static NodePool to remove: NodeClaims not
// launched yet, then nodes without workload pods, then by the number of
// workload pods to move, and nodes with an active do-not-disrupt pod last;
// ties by name, so that the choice is stable.
func Surplus(nodes []*state.StateNode, n int, now time.Time) []*state.StateNode {
	type ranked struct {
		sn                     *state.StateNode
		launched, doNotDisrupt bool
		workload               int
	}
	rs := make([]ranked, 0, len(nodes))
	for _, sn := range nodes {
		r := ranked{sn: sn, launched: sn.NodeClaim.Status.ProviderID != ""}
		for _, p := range sn.Pods {
			if scheduling.OwnedByDaemonSet(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			r.workload++
			if donotdisrupt.Active(p, now, nil) {
				r.doNotDisrupt = true
			}
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		switch {
		case a.doNotDisrupt != b.doNotDisrupt:
			return !a.doNotDisrupt
		case a.launched != b.launched:
			return !a.launched
		case a.workload != b.workload:
			return a.workload < b.workload
		}
		return a.sn.Name() < b.sn.Name()
	})
	out := make([]*state.StateNode, 0, n)
	for i := 0; i < n && i < len(rs); i++ {
		out = append(out, rs[i].sn)
	}
	return out
}

// Register watches NodePools and the NodeClaims of each.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("staticcapacity").
		For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[v1.NodePoolLabelKey]; name != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
			}
			return nil
		})).
		Complete(c)
}
