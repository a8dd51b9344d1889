package capacityreservation

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// CapacityTypeName is the capacity type controller's name (upstream's).
const CapacityTypeName = "capacityreservation.capacitytype"

// reservationLabels are the labels a reserved NodeClaim carries that an
// on-demand one does not.
var reservationLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible}

// Instances lists the cluster's instances as NodeClaims whose labels say
// what EC2 reports now (the AWS cloud provider's List).
type Instances interface {
	List(ctx context.Context) ([]*v1.NodeClaim, error)
}

// CapacityType relabels reserved NodeClaims and Nodes EC2 reports on-demand.
type CapacityType struct {
	loop
	kube      client.Client
	instances Instances
}

// NewCapacityType returns the capacity type controller.
func NewCapacityType(kube client.Client, instances Instances, clk clock.Clock) *CapacityType {
	c := &CapacityType{kube: kube, instances: instances}
	c.loop = loop{name: CapacityTypeName, clock: clk, pass: c.Pass}
	return c
}

// Pass relabels every NodeClaim labelled reserved whose instance EC2 now
// reports on-demand, and its registered Nodes.
func (c *CapacityType) Pass(ctx context.Context) error {
	described, err := c.instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	onDemand := map[string]bool{}
	for _, nc := range described {
		if nc.Labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeOnDemand {
			onDemand[nc.Status.ProviderID] = true
		}
	}
	list := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, list, client.MatchingLabels{v1.CapacityTypeLabelKey: v1.CapacityTypeReserved}); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, client.MatchingLabels{v1.CapacityTypeLabelKey: v1.CapacityTypeReserved}); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	byProviderID := map[string][]*corev1.Node{}
	for j := range nodes.Items {
		n := &nodes.Items[j]
		byProviderID[n.Spec.ProviderID] = append(byProviderID[n.Spec.ProviderID], n)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if !nc.DeletionTimestamp.IsZero() || nc.Status.ProviderID == "" || !onDemand[nc.Status.ProviderID] {
			continue
		}
		if err := relabel(ctx, c.kube, nc); err != nil {
			errs = append(errs, fmt.Errorf("nodeclaim %s: %w", nc.Name, err))
			continue
		}
		for _, n := range byProviderID[nc.Status.ProviderID] {
			if !n.DeletionTimestamp.IsZero() || n.Labels[v1.NodeRegisteredLabelKey] != "true" {
				continue
			}
			if err := relabel(ctx, c.kube, n); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
			}
		}
		log.FromContext(ctx).V(1).Info("updated capacity type for nodeclaim", "NodeClaim", nc.Name)
	}
	return errors.Join(errs...)
}

// relabel makes o on-demand without the reservation labels.
func relabel(ctx context.Context, kube client.Client, o client.Object) error {
	stored := o.DeepCopyObject().(client.Object)
	labels := o.GetLabels()
	labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeOnDemand
	for _, l := range reservationLabels {
		delete(labels, l)
	}
	o.SetLabels(labels)
	return client.IgnoreNotFound(kube.Patch(ctx, o, client.MergeFrom(stored)))
}
