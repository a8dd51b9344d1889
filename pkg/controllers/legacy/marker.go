package legacy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
)

// Marker keeps the Adopted and MachineDrifted conditions of every Machine
// and the karpenter.sh/termination finalizer on it, so that a deleted
// Machine always passes through the Terminator.
type Marker struct {
	kube  client.Client
	clock clock.Clock
}

// NewMarker returns the marker.
func NewMarker(kube client.Client, clk clock.Clock) *Marker { return &Marker{kube: kube, clock: clk} }

// Reconcile one Machine.
func (r *Marker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1alpha5.Machine{}
	if err := r.kube.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if m.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if !hasFinalizer(m) {
		stored := m.DeepCopy()
		m.Finalizers = append(m.Finalizers, v1.TerminationFinalizer)
		if err := r.kube.Patch(ctx, m, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	var prov *v1alpha5.Provisioner
	if name := m.Labels[v1alpha5.ProvisionerNameLabelKey]; name != "" {
		p := &v1alpha5.Provisioner{}
		if err := r.kube.Get(ctx, types.NamespacedName{Name: name}, p); err == nil {
			prov = p
		} else if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	pools := &v1.NodePoolList{}
	if err := r.kube.List(ctx, pools); err != nil {
		return reconcile.Result{}, err
	}
	stored := m.DeepCopy()
	now := metav1.NewTime(r.clock.Now())
	adopted := v1alpha5.Condition{Type: ConditionAdopted, Status: corev1.ConditionTrue, Reason: ReasonAdopted}
	if np := Successor(m.Labels[v1alpha5.ProvisionerNameLabelKey], pools.Items); np == nil {
		adopted.Reason = ReasonNoNodePool
		adopted.Message = fmt.Sprintf("no NodePool succeeds provisioner %q (none of that name, and not exactly one NodePool): its pods have nowhere to go until one is created", m.Labels[v1alpha5.ProvisionerNameLabelKey])
	} else {
		adopted.Message = fmt.Sprintf("managed until migrated; NodePool %s receives its pods", np.Name)
	}
	changed := setCondition(m, adopted, now)
	drifted := v1alpha5.Condition{Type: ConditionDrifted, Status: corev1.ConditionFalse, Reason: ReasonNotDrifted}
	if reason, msg := Drift(m, prov); reason != "" {
		drifted = v1alpha5.Condition{Type: ConditionDrifted, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
		// A blocked replacement's message says why; keep it while still drifted.
		if cur := getCondition(m, ConditionDrifted); cur != nil && cur.Status == corev1.ConditionTrue && cur.Reason == ReasonReplacementBlocked {
			drifted = *cur
		}
	}
	changed = setCondition(m, drifted, now) || changed
	if changed {
		if err := r.kube.Status().Patch(ctx, m, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{}, nil
}

// Successor is the NodePool that takes over a Provisioner's workloads: the
// one of the same name (karpenter-convert keeps names), else the only
// NodePool there is; nil when neither exists.
func Successor(provisioner string, pools []v1.NodePool) *v1.NodePool {
	var live []*v1.NodePool
	for i := range pools {
		if pools[i].DeletionTimestamp != nil {
			continue
		}
		if pools[i].Name == provisioner {
			return &pools[i]
		}
		live = append(live, &pools[i])
	}
	if len(live) == 1 {
		return live[0]
	}
	return nil
}

// Register adds the marker: Machines, and every Machine of a Provisioner or
// of any NodePool that changes.
func (r *Marker) Register(mgr manager.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &v1alpha5.MachineList{}
		opts := []client.ListOption{}
		if _, ok := o.(*v1alpha5.Provisioner); ok {
			opts = append(opts, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: o.GetName()})
		}
		if err := r.kube.List(ctx, list, opts...); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
		return out
	})
	return builder.ControllerManagedBy(mgr).Named("legacy.marker").
		For(&v1alpha5.Machine{}).
		Watches(&v1alpha5.Provisioner{}, all).
		Watches(&v1.NodePool{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == v1.TerminationFinalizer {
			return true
		}
	}
	return false
}
