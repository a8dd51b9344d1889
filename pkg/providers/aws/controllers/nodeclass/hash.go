package nodeclass

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// HashController keeps the annotations karpenter.k8s.aws/ec2nodeclass-hash
// and -hash-version on every EC2NodeClass current. CloudProvider.Create
// copies both onto the NodeClaims it launches, and drift compares them
// (NodeClassDrift), but only when the versions agree.
//
// The version exists so that a Karpenter whose hash is computed differently
// (a new release, or a switch from upstream Karpenter) does not see every
// NodeClaim as drifted and roll the fleet: when the class's stored version
// is not this build's, the class's NodeClaims are re-stamped with the new
// hash and version instead of being left to mismatch. A NodeClaim that was
// already Drifted keeps its old hash (only its version moves), since whether
// it still differs cannot be told across algorithms; it stays drifted.
type HashController struct {
	kubeClient client.Client
}

// NewHashController returns the hash controller.
func NewHashController(kubeClient client.Client) *HashController {
	return &HashController{kubeClient: kubeClient}
}

// Name of the controller, as upstream's.
func (c *HashController) Name() string { return "nodeclass.hash" }

// Reconcile stamps one EC2NodeClass.
func (c *HashController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	hash := nc.Hash()
	// Claims first: if this fails the class keeps its old version and the
	// next reconcile tries again, rather than the claims being stranded on
	// a version the class no longer carries.
	if nc.Annotations[v1.AnnotationEC2NodeClassHashVersion] != v1.EC2NodeClassHashVersion {
		if err := c.restampNodeClaims(ctx, nc.Name, hash); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.AnnotationEC2NodeClassHash] = hash
	nc.Annotations[v1.AnnotationEC2NodeClassHashVersion] = v1.EC2NodeClassHashVersion
	if equality.Semantic.DeepEqual(stored.Annotations, nc.Annotations) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating EC2NodeClass %s with its hash: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

// restampNodeClaims moves the class's NodeClaims that carry another hash
// version to this one.
func (c *HashController) restampNodeClaims(ctx context.Context, className, hash string) error {
	list := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return fmt.Errorf("listing NodeClaims of EC2NodeClass %s: %w", className, err)
	}
	var errs []error
	for i := range list.Items {
		claim := &list.Items[i]
		if !usesEC2NodeClass(claim) || claim.Spec.NodeClassRef.Name != className {
			continue
		}
		if claim.Annotations[v1.AnnotationEC2NodeClassHashVersion] == v1.EC2NodeClassHashVersion {
			continue
		}
		stored := claim.DeepCopy()
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[v1.AnnotationEC2NodeClassHashVersion] = v1.EC2NodeClassHashVersion
		if !claim.StatusConditions().Get(karpv1.ConditionTypeDrifted).IsTrue() {
			claim.Annotations[v1.AnnotationEC2NodeClassHash] = hash
		}
		if err := c.kubeClient.Patch(ctx, claim, client.MergeFrom(stored)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("re-stamping the hash of NodeClaim %s: %w", claim.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Register adds the controller to mgr. Only spec changes (generation) and
// annotation changes (someone removing or editing ours) matter.
func (c *HashController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.EC2NodeClass{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
		))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}
