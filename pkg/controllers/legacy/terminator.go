package legacy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/instance"
)

// Terminator finalizes Machines as the NodeClaim finalizer finalizes
// NodeClaims: a Machine and its Node go together (deleting either deletes
// the other), the Node's own karpenter.sh/termination finalizer drains it
// (package node/termination), and the Machine's finalizer is removed only
// after the Node is gone and the CloudProvider reports the instance gone.
type Terminator struct {
	kube          client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      record.EventRecorder
}

// NewTerminator returns the terminator. recorder may be nil.
func NewTerminator(kube client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) *Terminator {
	return &Terminator{kube: kube, cloudProvider: cp, clock: clk, recorder: recorder}
}

// poll is how often a finalizing Machine is looked at while its Node drains
// (the Node's deletion also brings it back).
const poll = 2 * time.Second

// Reconcile one Machine.
func (r *Terminator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1alpha5.Machine{}
	if err := r.kube.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("Machine", m.Name))
	node, err := NodeOf(ctx, r.kube, m)
	if err != nil {
		return reconcile.Result{}, err
	}
	if m.DeletionTimestamp == nil {
		// kubectl delete node: the Machine goes with it.
		if node != nil && node.DeletionTimestamp != nil {
			log.FromContext(ctx).Info("deleting machine of deleted node", "Node", node.Name)
			return reconcile.Result{}, client.IgnoreNotFound(r.kube.Delete(ctx, m))
		}
		return reconcile.Result{}, nil
	}
	if !hasFinalizer(m) {
		return reconcile.Result{}, nil
	}
	if node != nil {
		if node.DeletionTimestamp == nil {
			// The Node's finalizer is what drains it: make sure it has one
			// (v0.31 always added it; a hand-made Node may not have it).
			if !hasFinalizer(node) {
				stored := node.DeepCopy()
				node.Finalizers = append(node.Finalizers, v1.TerminationFinalizer)
				if err := r.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
					return requeueOnConflict(client.IgnoreNotFound(err))
				}
			}
			if err := r.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
			}
			log.FromContext(ctx).Info("deleted node of deleted machine", "Node", node.Name)
			r.event(m, corev1.EventTypeNormal, "Draining", fmt.Sprintf("Draining node %s before terminating the instance", node.Name))
		}
		return reconcile.Result{RequeueAfter: poll}, nil
	}
	if pid := m.Status.ProviderID; pid != "" {
		// A stand-in NodeClaim: the CloudProvider deletes by provider ID.
		target := &v1.NodeClaim{}
		target.Name = m.Name
		target.Status.ProviderID = pid
		terminated, err := instance.EnsureTerminated(ctx, r.kube, r.cloudProvider, r.clock, target, false)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("terminating instance %s: %w", pid, err)
		}
		if !terminated {
			return reconcile.Result{RequeueAfter: instance.Poll}, nil
		}
	}
	stored := m.DeepCopy()
	controllerutil.RemoveFinalizer(m, v1.TerminationFinalizer)
	if err := r.kube.Patch(ctx, m, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return requeueOnConflict(client.IgnoreNotFound(err))
	}
	log.FromContext(ctx).Info("deleted machine", "providerID", m.Status.ProviderID)
	return reconcile.Result{}, nil
}

func (r *Terminator) event(o client.Object, kind, reason, msg string) {
	if r.recorder != nil {
		r.recorder.Event(o, kind, reason, msg)
	}
}

// NodeOf finds a Machine's Node: by status.nodeName, else by provider ID;
// nil when there is none.
func NodeOf(ctx context.Context, kube client.Client, m *v1alpha5.Machine) (*corev1.Node, error) {
	if m.Status.NodeName != "" {
		n := &corev1.Node{}
		err := kube.Get(ctx, types.NamespacedName{Name: m.Status.NodeName}, n)
		if err == nil && (m.Status.ProviderID == "" || n.Spec.ProviderID == m.Status.ProviderID) {
			return n, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	if m.Status.ProviderID == "" {
		return nil, nil
	}
	list := &corev1.NodeList{}
	if err := kube.List(ctx, list, client.HasLabels{v1alpha5.ProvisionerNameLabelKey}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Spec.ProviderID == m.Status.ProviderID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// machinesOfNode maps a Node event to its Machine: the owner reference v0.31
// wrote, else the Machine with the Node's provider ID.
func (r *Terminator) machinesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	for _, ref := range node.OwnerReferences {
		if ref.Kind == "Machine" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
	}
	if node.Labels[v1alpha5.ProvisionerNameLabelKey] == "" || node.Spec.ProviderID == "" {
		return nil
	}
	list := &v1alpha5.MachineList{}
	if err := r.kube.List(ctx, list); err != nil {
		return nil
	}
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}}
		}
	}
	return nil
}

// Register adds the terminator: Machines, and the Nodes of Machines when
// they are deleted or go away.
func (r *Terminator) Register(mgr manager.Manager) error {
	legacyNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		if o.GetLabels()[v1alpha5.ProvisionerNameLabelKey] != "" {
			return true
		}
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "Machine" {
				return true
			}
		}
		return false
	})
	return builder.ControllerManagedBy(mgr).Named("legacy.terminator").
		For(&v1alpha5.Machine{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfNode), builder.WithPredicates(legacyNode)).
		Complete(r)
}

func requeueOnConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}
