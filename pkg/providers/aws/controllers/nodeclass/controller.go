package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/securitygroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
)

// SecurityGroupRefreshInterval is upstream's requeue after resolving security
// groups. What SECURITY_GROUP_REFRESH_INTERVAL sets is how long the answers
// of DescribeSecurityGroups are reused (the security group provider's TTL,
// as upstream's cache): a reconcile within it sees the cached groups.
const SecurityGroupRefreshInterval = 5 * time.Minute

// Providers are the AWS resolvers the controller uses.
type Providers struct {
	Subnets          *subnet.Provider
	SecurityGroups   *securitygroup.Provider
	AMIs             *amifamily.Provider
	InstanceProfiles *instanceprofile.Provider
	// CapacityReservations resolves capacityReservationSelectorTerms.
	CapacityReservations *capacityreservation.Provider
	// PlacementGroups resolves placementGroupSelector.
	PlacementGroups *placementgroup.Provider
	EC2             *ec2.Client
	// LaunchTemplates, when set, deletes a class's launch templates when
	// the class goes.
	LaunchTemplates *launchtemplate.Provider
	// KubeletExpressions, when set, evaluates a class's kubelet CEL
	// expressions for every instance type (the instance type provider):
	// one without a usable result makes ValidationSucceeded False.
	KubeletExpressions KubeletExpressionValidator
}

// KubeletExpressionValidator evaluates the kubelet CEL expressions of a
// class for every instance type; nil when they all have a usable result.
type KubeletExpressionValidator interface {
	ValidateKubeletExpressions(ctx context.Context, nc *v1.EC2NodeClass) error
}

// Controller reconciles EC2NodeClasses.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
	opts       *settings.Options
	providers  Providers
	validation *validation

	// DisableReservedCapacity (feature gate ReservedCapacity=false):
	// capacityReservationSelectorTerms are not resolved.
	DisableReservedCapacity bool
}

// NewController returns the EC2NodeClass controller. recorder may be nil.
func NewController(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder, opts *settings.Options, providers Providers) *Controller {
	return &Controller{
		kubeClient: kubeClient, clock: clk, recorder: recorder, opts: opts, providers: providers,
		validation: newValidation(kubeClient, providers.EC2, clk, opts, providers.KubeletExpressions),
	}
}

// Name of the controller, as upstream's.
func (c *Controller) Name() string { return "nodeclass" }

// Reconcile resolves one EC2NodeClass, or finalizes it when it is being deleted.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		stored := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
		// Optimistic lock: a merge patch replaces the whole finalizer list.
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}

	stored := nc.DeepCopy()
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	conds.InitializeConditions()

	var errs []error
	requeue := time.Duration(0)
	for _, step := range []func(context.Context, *v1.EC2NodeClass) (time.Duration, error){
		c.resolveSubnets,
		c.resolveSecurityGroups,
		c.resolveAMIs,
		c.resolveInstanceProfile,
		c.resolveCapacityReservations,
		c.resolvePlacementGroup,
		c.validation.reconcile, // last: it depends on the others
	} {
		after, err := step(ctx, nc)
		if err != nil {
			errs = append(errs, err)
		}
		if after > 0 && (requeue == 0 || after < requeue) {
			requeue = after
		}
	}

	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("writing EC2NodeClass status: %w", err))
			}
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// setUnknownUnlessTrue records why a resolution could not run without
// discarding a True answer from an earlier reconcile (AWS being throttled
// says nothing about the EC2NodeClass).
func setUnknownUnlessTrue(nc *v1.EC2NodeClass, conds status.ConditionSet, t, reason string, err error) {
	if conds.Get(t).IsTrue() {
		return
	}
	conds.SetUnknown(t, reason, err.Error())
}

// Register adds the controller to mgr: it watches EC2NodeClasses and the
// deletion of NodeClaims (which may release a deleted class's finalizer).
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.EC2NodeClass{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{},
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				// Deletion and our own finalizer do not change the generation.
				return !e.ObjectNew.GetDeletionTimestamp().Equal(e.ObjectOld.GetDeletionTimestamp()) ||
					len(e.ObjectNew.GetFinalizers()) != len(e.ObjectOld.GetFinalizers())
			}},
		))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			nodeClaim, ok := o.(*karpv1.NodeClaim)
			if !ok || !usesEC2NodeClass(nodeClaim) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nodeClaim.Spec.NodeClassRef.Name}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		// The validation's dry runs ask for dedicated tenancy when a NodePool
		// of the class allows it: a NodePool created or changed is looked at.
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			np, ok := o.(*karpv1.NodePool)
			if !ok || np.Spec.Template.Spec.NodeClassRef == nil || !refersTo(np.Spec.Template.Spec.NodeClassRef, np.Spec.Template.Spec.NodeClassRef.Name) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: np.Spec.Template.Spec.NodeClassRef.Name}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return true },
			UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// usesEC2NodeClass reports whether a NodeClaim references an EC2NodeClass.
func usesEC2NodeClass(nodeClaim *karpv1.NodeClaim) bool {
	ref := nodeClaim.Spec.NodeClassRef
	return ref != nil && refersTo(ref, ref.Name)
}

// refersTo reports whether ref names the EC2NodeClass name.
func refersTo(ref *karpv1.NodeClassReference, name string) bool {
	if ref == nil || ref.Name != name {
		return false
	}
	return (ref.Group == "" || ref.Group == v1.Group) && (ref.Kind == "" || ref.Kind == "EC2NodeClass")
}
