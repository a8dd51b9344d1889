package capacity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
)

// Name of the controller, as upstream's.
const Name = "providers.instancetype.capacity"

// Controller records registered nodes' memory in the instance type provider.
type Controller struct {
	kubeClient    client.Client
	instanceTypes *instancetype.Provider
}

// NewController returns the controller.
func NewController(kubeClient client.Client, instanceTypes *instancetype.Provider) *Controller {
	return &Controller{kubeClient: kubeClient, instanceTypes: instanceTypes}
}

// Name of the controller.
func (c *Controller) Name() string { return Name }

// Reconcile records the memory of one registered node of an EC2NodeClass.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !Managed(node) {
		return reconcile.Result{}, nil
	}
	nodeClaim, err := c.nodeClaimFor(ctx, node)
	if err != nil || nodeClaim == nil {
		return reconcile.Result{}, err
	}
	if nodeClaim.Spec.NodeClassRef == nil {
		return reconcile.Result{}, nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nodeClaim.Spec.NodeClassRef.Name}, nc); err != nil {
		// Upstream retries with backoff here, a missing class included: the
		// node's memory is worth recording once the class can be read.
		return reconcile.Result{}, fmt.Errorf("getting EC2NodeClass %s of node %s: %w", nodeClaim.Spec.NodeClassRef.Name, node.Name, err)
	}
	c.instanceTypes.UpdateCapacityFromNode(ctx, node, nodeClaim, nc)
	return reconcile.Result{}, nil
}

// nodeClaimFor finds the node's NodeClaim by provider ID, as upstream does:
// nil when there is none (a node Karpenter no longer tracks teaches nothing),
// an error when several claim the same instance.
func (c *Controller) nodeClaimFor(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	return lifecycle.NodeClaimForNode(ctx, c.kubeClient, node)
}

// Managed: the node carries the karpenter.k8s.aws/ec2nodeclass label, which
// is how upstream tells the nodes of its cloud provider.
func Managed(node *corev1.Node) bool {
	_, ok := node.Labels[awsv1.LabelNodeClass]
	return ok
}

func registered(o client.Object) bool {
	return o.GetLabels()[v1.NodeRegisteredLabelKey] == "true"
}

// Triggers are upstream's: a managed node that appears registered (every
// registered node the informer lists at start among them, which seeds the
// provider after a restart) and one that gains the registered label. Later
// updates and deletions change nothing the provider keeps.
var Triggers = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		n, ok := e.Object.(*corev1.Node)
		return ok && Managed(n) && registered(n)
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		n, ok := e.ObjectNew.(*corev1.Node)
		return ok && Managed(n) && e.ObjectOld.GetLabels()[v1.NodeRegisteredLabelKey] == "" && registered(n)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// Register adds the controller to mgr. One reconcile at a time, as upstream:
// they only take a lock of the provider and are rare.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := lifecycle.IndexNodeClaimProviderID(ctx, mgr.GetFieldIndexer()); err != nil {
		// Registered already by another controller; lookups work either way.
		mgr.GetLogger().V(1).Info("field index not added", "field", lifecycle.NodeClaimProviderIDIndex, "error", err.Error())
	}
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(Triggers)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(c)
}
