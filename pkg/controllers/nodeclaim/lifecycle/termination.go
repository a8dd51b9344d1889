package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/metrics"
)

// InstanceDeletePoll is how often Finalize checks on an instance whose
// deletion the cloud provider accepted but has not finished.
const InstanceDeletePoll = 5 * time.Second

// Terminator finalizes deleted NodeClaims.
//
// This is the minimal path: delete the instance until the cloud provider says
// it is gone, then remove the Node (dropping our finalizer from it) and the
// NodeClaim's finalizer. Draining the node before the instance is deleted
// (taint, evictions within PodDisruptionBudgets, terminationGracePeriod,
// volume detachment) is the next step of the termination work and goes at the
// top of Finalize, before the instance is touched.
type Terminator struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

// Finalize makes progress on a deleting NodeClaim and removes its finalizer
// once its instance and Node are gone.
func (t *Terminator) Finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !hasFinalizer(nc) {
		return reconcile.Result{}, nil
	}
	// A NodeClaim without a provider ID has not recorded a launch. If an
	// instance was created anyway (a crash between Create and the status
	// write), it carries the NodeClaim's name and garbage collection removes it
	// once the NodeClaim is gone.
	if nc.Status.ProviderID != "" {
		err := t.cloudProvider.Delete(ctx, nc)
		if !cloudprovider.IsNodeClaimNotFoundError(err) {
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("deleting instance of nodeclaim %s: %w", nc.Name, err)
			}
			if err := t.markTerminating(ctx, nc); err != nil {
				return conflictIsRequeue(client.IgnoreNotFound(err))
			}
			return reconcile.Result{RequeueAfter: InstanceDeletePoll}, nil
		}
	}
	// The instance is gone; its Node can go too.
	nodes, err := nodesForProviderID(ctx, t.kubeClient, nc.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, node := range nodes {
		if err := t.removeNode(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
		metrics.NodesTerminatedTotal.WithLabelValues(nodePoolOf(nc)).Inc()
	}
	stored := nc.DeepCopy()
	removeFinalizer(nc)
	if err := t.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return conflictIsRequeue(client.IgnoreNotFound(err))
	}
	metrics.NodeClaimsTerminatedTotal.WithLabelValues(nodePoolOf(nc), nc.Labels[v1.CapacityTypeLabelKey]).Inc()
	if nc.DeletionTimestamp != nil {
		metrics.InstanceTerminationDuration.WithLabelValues(nodePoolOf(nc)).Observe(t.clock.Since(nc.DeletionTimestamp.Time).Seconds())
	}
	log.FromContext(ctx).V(1).Info("finalized nodeclaim", "NodeClaim", nc.Name)
	return reconcile.Result{}, nil
}

// markTerminating records that the instance's deletion is under way.
func (t *Terminator) markTerminating(ctx context.Context, nc *v1.NodeClaim) error {
	stored := nc.DeepCopy()
	conditions(nc, t.clock).SetTrue(v1.ConditionTypeInstanceTerminating)
	if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		return nil
	}
	return t.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

func (t *Terminator) removeNode(ctx context.Context, node *corev1.Node) error {
	if hasFinalizer(node) {
		stored := node.DeepCopy()
		removeFinalizer(node)
		if err := t.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if node.DeletionTimestamp.IsZero() {
		if err := t.kubeClient.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// NodeTerminationController handles a Node deleted directly (kubectl delete
// node): the Node's finalizer holds it while its NodeClaim is deleted, whose
// finalization then deletes the instance and releases the Node. A Node whose
// NodeClaim is already gone is released at once.
type NodeTerminationController struct {
	kubeClient client.Client
}

// NewNodeTerminationController returns the controller.
func NewNodeTerminationController(kubeClient client.Client) *NodeTerminationController {
	return &NodeTerminationController{kubeClient: kubeClient}
}

// Reconcile one Node.
func (c *NodeTerminationController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !hasFinalizer(node) {
		return reconcile.Result{}, nil
	}
	claims := nodeClaimsForNode(ctx, c.kubeClient, node)
	if len(claims) == 0 {
		stored := node.DeepCopy()
		removeFinalizer(node)
		return reconcile.Result{}, client.IgnoreNotFound(c.kubeClient.Patch(ctx, node, client.MergeFrom(stored)))
	}
	for _, nc := range claims {
		if nc.DeletionTimestamp.IsZero() {
			if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		}
	}
	// The NodeClaim's finalizer removes ours from the Node.
	return reconcile.Result{}, nil
}

// Register adds the controller to the manager.
func (c *NodeTerminationController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("node.termination.lite").For(&corev1.Node{}).Complete(c)
}

func nodeClaimsForNode(ctx context.Context, c client.Client, node *corev1.Node) []*v1.NodeClaim {
	var out []*v1.NodeClaim
	for _, req := range nodeClaimsForProviderID(ctx, c, node.Spec.ProviderID) {
		nc := &v1.NodeClaim{}
		if err := c.Get(ctx, types.NamespacedName{Name: req.Name}, nc); err == nil {
			out = append(out, nc)
		}
	}
	return out
}
