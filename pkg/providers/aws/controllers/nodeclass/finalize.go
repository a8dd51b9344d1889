package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// EventWaitingOnNodeClaimTermination is upstream's event reason while a
// deleted EC2NodeClass waits for its NodeClaims.
const EventWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"

// finalize releases the termination finalizer once no NodeClaim uses the
// class, deleting the launch templates and instance profiles Karpenter
// created for it first.
func (c *Controller) finalize(ctx context.Context, nc *v1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	users, err := c.nodeClaimsUsing(ctx, nc.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(users) > 0 {
		if c.recorder != nil {
			c.recorder.Eventf(nc, corev1.EventTypeNormal, EventWaitingOnNodeClaimTermination,
				"Waiting on NodeClaim termination for %s", strings.Join(users, ", "))
		}
		// The NodeClaim watch wakes us on each deletion; the requeue keeps
		// the event fresh for whoever is watching.
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	// Launch templates are looked up by tag, so they go even when this
	// process never created (or has forgotten) them.
	if c.providers.LaunchTemplates != nil {
		if err := c.providers.LaunchTemplates.DeleteAll(ctx, nc); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting the launch templates of EC2NodeClass %s: %w", nc.Name, err)
		}
	}
	if nc.Spec.Role != "" {
		if err := c.providers.InstanceProfiles.DeleteAll(ctx, nc); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting the instance profiles of EC2NodeClass %s: %w", nc.Name, err)
		}
	}
	c.validation.forget(nc.Name)
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the termination finalizer: %w", err))
	}
	return reconcile.Result{}, nil
}

// nodeClaimsUsing names the NodeClaims that reference the EC2NodeClass, sorted.
func (c *Controller) nodeClaimsUsing(ctx context.Context, name string) ([]string, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing NodeClaims that use EC2NodeClass %s: %w", name, err)
	}
	var out []string
	for i := range list.Items {
		if usesEC2NodeClass(&list.Items[i]) && list.Items[i].Spec.NodeClassRef.Name == name {
			out = append(out, list.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
