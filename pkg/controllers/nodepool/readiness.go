package nodepool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// Readiness mirrors the referenced NodeClass's Ready condition into the
// NodePool's NodeClassReady condition, and records the NodeClass generation it
// saw in status.nodeClassObservedGeneration: when the NodeClass changes, a
// NodeRegistrationHealthy=False left by launches from its previous spec goes
// back to Unknown, since the change may be the fix.
type Readiness struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

// NewReadiness returns the readiness controller. The NodeClass kinds it can
// read are the ones the cloud provider supports.
func NewReadiness(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock) *Readiness {
	return &Readiness{kubeClient: kubeClient, cloudProvider: cloudProvider, clock: clk}
}

// Reconcile sets NodeClassReady on one NodePool.
func (r *Readiness) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := r.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := np.DeepCopy()
	conds := conditions(np, r.clock)
	ready, reason, message, generation, err := r.nodeClassReady(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	if generation != 0 && generation != np.Status.NodeClassObservedGeneration {
		if c := conds.Get(v1.ConditionTypeNodeRegistrationHealthy); c != nil && c.IsFalse() {
			conds.SetUnknown(v1.ConditionTypeNodeRegistrationHealthy, "NodeClassChanged", "the NodeClass changed since launches failed to register; the next launch tells whether it registers now")
		}
		np.Status.NodeClassObservedGeneration = generation
	}
	if ready {
		conds.SetTrue(v1.ConditionTypeNodeClassReady)
	} else {
		conds.SetFalse(v1.ConditionTypeNodeClassReady, reason, message)
	}
	return patchStatus(ctx, r.kubeClient, stored, np)
}

func (r *Readiness) nodeClassReady(ctx context.Context, np *v1.NodePool) (bool, string, string, int64, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return false, "NodeClassNotFound", "nodeClassRef is not set", 0, nil
	}
	nodeClass := r.supported(ref.GroupKind())
	if nodeClass == nil {
		return false, "NodeClassNotFound", fmt.Sprintf("NodeClass kind %s is not supported by the %s cloud provider", ref.GroupKind(), r.cloudProvider.Name()), 0, nil
	}
	if err := r.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "NodeClassNotFound", fmt.Sprintf("%s %q not found", ref.Kind, ref.Name), 0, nil
		}
		return false, "", "", 0, err
	}
	if !nodeClass.GetDeletionTimestamp().IsZero() {
		return false, "NodeClassTerminating", fmt.Sprintf("%s %q is being deleted", ref.Kind, ref.Name), nodeClass.GetGeneration(), nil
	}
	withConds, ok := nodeClass.(status.Object)
	if !ok {
		return false, "", "", 0, fmt.Errorf("%T has no status conditions", nodeClass)
	}
	cond := withConds.StatusConditions().Root()
	switch {
	case cond.IsTrue():
		return true, "", "", nodeClass.GetGeneration(), nil
	case cond == nil:
		return false, "NodeClassNotReady", fmt.Sprintf("%s %q has no Ready condition yet", ref.Kind, ref.Name), nodeClass.GetGeneration(), nil
	}
	msg := cond.Message
	if msg == "" {
		msg = fmt.Sprintf("%s %q is not ready", ref.Kind, ref.Name)
	}
	return false, "NodeClassNotReady", msg, nodeClass.GetGeneration(), nil
}

// supported returns an empty object of the NodeClass kind, or nil.
func (r *Readiness) supported(gk schema.GroupKind) client.Object {
	for _, o := range r.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(o, r.kubeClient.Scheme())
		if err == nil && gvk.GroupKind() == gk {
			return o.DeepCopyObject().(client.Object)
		}
	}
	return nil
}

// Register adds the controller to the manager; it also watches the NodeClass
// kinds of the cloud provider.
func (r *Readiness) Register(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named("nodepool.readiness").For(&v1.NodePool{})
	for _, nc := range r.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, handler.EnqueueRequestsFromMapFunc(r.nodePoolsFor))
	}
	return b.Complete(r)
}

// nodePoolsFor maps a NodeClass to the NodePools referencing it.
func (r *Readiness) nodePoolsFor(ctx context.Context, o client.Object) []reconcile.Request {
	gvk, err := apiutil.GVKForObject(o, r.kubeClient.Scheme())
	if err != nil {
		return nil
	}
	list := &v1.NodePoolList{}
	if err := r.kubeClient.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		ref := list.Items[i].Spec.Template.Spec.NodeClassRef
		if ref != nil && ref.Name == o.GetName() && ref.GroupKind() == gvk.GroupKind() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}
