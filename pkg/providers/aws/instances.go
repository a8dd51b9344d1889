package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

var errNoInstances = errors.New("the aws cloud provider was built without an instance provider, so it cannot launch, list or terminate instances")

// Create launches an instance for the NodeClaim: the EC2NodeClass it refers
// to must be Ready; the instance types are the class's that meet the
// NodeClaim's requirements and fit its requests.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	if c.instances == nil {
		return nil, cloudprovider.NewCreateError(errNoInstances, "LaunchNotConfigured", errNoInstances.Error())
	}
	nc, err := c.nodeClassByRef(ctx, nodeClaim.Spec.NodeClassRef, "NodeClaim", nodeClaim.Name)
	if err != nil {
		return nil, err
	}
	// A tenancy EC2 cannot be asked for is refused by name before instance
	// types are matched (every type offers default and dedicated only, so
	// the mismatch would otherwise read as a lack of capacity).
	if _, err := instance.Tenancy(instance.Requirements(nodeClaim)); err != nil {
		return nil, cloudprovider.NewCreateError(err, instance.ReasonUnsupportedTenancy, fmt.Sprintf("NodeClaim %s: %v", nodeClaim.Name, err))
	}
	all, err := c.instanceTypes.List(ctx, nc)
	if err != nil {
		return nil, cloudprovider.NewCreateError(err, "InstanceTypeResolutionFailed", fmt.Sprintf("listing instance types of EC2NodeClass %q: %v", nc.Name, err))
	}
	if pool := nodeClaim.Labels[v1.NodePoolLabelKey]; c.overlays != nil && pool != "" {
		// A NodeClaim of no NodePool has no overlays, as upstream.
		if all, err = c.overlays.ApplyAll(pool, all); err != nil {
			return nil, fmt.Errorf("applying nodeoverlays: %w", err)
		}
	}
	its := compatibleInstanceTypes(nodeClaim, all)
	if len(its) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("none of the %d instance types of EC2NodeClass %q meets the requirements %s and fits the requests %s of NodeClaim %s",
			len(all), nc.Name, instance.Requirements(nodeClaim), scheduling.FormatResources(nodeClaim.Spec.Resources.Requests), nodeClaim.Name))
	}
	inst, err := c.instances.Create(ctx, nc, nodeClaim, Tags(nc, nodeClaim, c.clusterName), its)
	if err != nil {
		return nil, err
	}
	var it *scheduling.InstanceType
	for _, t := range its {
		if t.Name == inst.Type {
			it = t
		}
	}
	out := c.toNodeClaim(inst, it)
	out.Name = nodeClaim.Name
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = nc.Hash()
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
	if nc.Status.InstanceProfile != "" {
		out.Annotations[awsv1.AnnotationInstanceProfile] = nc.Status.InstanceProfile
	}
	return out, nil
}

// Tags are what every instance, volume and fleet of a launch carries, and
// launch templates too: the class's spec.tags, then the cluster's ownership,
// the NodePool and the EC2NodeClass (these win over spec.tags). The NodeClaim's
// own name is added after registration by the tagging controller, so that
// launches of one NodePool are identical and batch into one fleet.
func Tags(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, clusterName string) map[string]string {
	out := map[string]string{}
	for k, v := range nc.Spec.Tags {
		out[k] = v
	}
	out[awsv1.TagClusterPrefix+clusterName] = "owned"
	out[awsv1.TagEKSClusterName] = clusterName
	out[awsv1.TagNodePool] = nodeClaim.Labels[v1.NodePoolLabelKey]
	out[awsv1.TagEC2NodeClass] = nc.Name
	return out
}

// compatibleInstanceTypes are the types whose requirements meet the
// NodeClaim's, whose allocatable fits its requests, and that have an
// available offering it accepts.
func compatibleInstanceTypes(nodeClaim *v1.NodeClaim, its []*scheduling.InstanceType) []*scheduling.InstanceType {
	reqs := instance.Requirements(nodeClaim)
	var out []*scheduling.InstanceType
	for _, it := range its {
		if !reqs.Has(corev1.LabelInstanceTypeStable, it.Name) || reqs.Intersects(it.Requirements) != nil {
			continue
		}
		if !fits(nodeClaim.Spec.Resources.Requests, it.Allocatable()) {
			continue
		}
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Launchable() && reqs.Has(scheduling.LabelZone, o.Zone) && reqs.Has(scheduling.LabelCapacityType, o.CapacityType) &&
				(o.Requirements.Len() == 0 || reqs.Intersects(o.Requirements) == nil) {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		if a, ok := allocatable[name]; !ok || a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// toNodeClaim is the NodeClaim view of an instance: labels of its instance
// type (when known) and offering, provider ID, image, capacity.
func (c *CloudProvider) toNodeClaim(inst *instance.Instance, it *scheduling.InstanceType) *v1.NodeClaim {
	labels := map[string]string{}
	var capacity, allocatable corev1.ResourceList
	if it != nil {
		for _, r := range it.Requirements.All() {
			if v, ok := r.Single(); ok && r.Operator() == corev1.NodeSelectorOpIn {
				labels[r.Key] = v
			}
		}
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Zone != inst.Zone || o.CapacityType != inst.CapacityType {
				continue
			}
			if inst.CapacityReservationID != "" && !o.Requirements.Has(awsv1.LabelCapacityReservationID, inst.CapacityReservationID) {
				continue
			}
			for _, r := range o.Requirements.All() {
				if v, ok := r.Single(); ok && r.Operator() == corev1.NodeSelectorOpIn {
					labels[r.Key] = v
				}
			}
			break
		}
		capacity = it.Capacity.DeepCopy()
		allocatable = it.Allocatable()
		// The EFA resource only when the instance has EFA interfaces (the
		// NodeClaim asked for EFA or its class lists interfaces), as upstream.
		if inst.EFACount == 0 {
			delete(capacity, awsv1.ResourceEFA)
			delete(allocatable, awsv1.ResourceEFA)
		}
	}
	labels[corev1.LabelInstanceTypeStable] = inst.Type
	labels[corev1.LabelTopologyZone] = inst.Zone
	labels[v1.CapacityTypeLabelKey] = inst.CapacityType
	// The tenancy EC2 reports (or launched with), as upstream.
	if inst.Tenancy != "" {
		labels[awsv1.LabelInstanceTenancy] = inst.Tenancy
	}
	if inst.CapacityReservationID != "" {
		labels[awsv1.LabelCapacityReservationID] = inst.CapacityReservationID
	}
	// The placement group and partition the instance runs in, as upstream
	// labels them (an offering's partition is one the instance may not have).
	delete(labels, awsv1.LabelPlacementGroupPartition)
	if inst.PlacementGroupID != "" {
		labels[awsv1.LabelPlacementGroupID] = inst.PlacementGroupID
	}
	if inst.PartitionNumber > 0 {
		labels[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(inst.PartitionNumber))
	}
	if np := inst.Tags[awsv1.TagNodePool]; np != "" {
		labels[v1.NodePoolLabelKey] = np
	}
	out := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              inst.Tags[awsv1.TagNodeClaim],
			Labels:            labels,
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(inst.LaunchTime),
		},
		Status: v1.NodeClaimStatus{
			ProviderID:  inst.ProviderID(),
			ImageID:     inst.ImageID,
			Capacity:    capacity,
			Allocatable: allocatable,
		},
	}
	if ncName := inst.Tags[awsv1.TagEC2NodeClass]; ncName != "" {
		labels[awsv1.LabelNodeClass] = ncName
		out.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: ncName}
	}
	return out
}

// instanceTypeOf looks the instance's type up in its EC2NodeClass, for the
// capacity of listed instances (with the NodeOverlays of its NodePool); nil
// when the class or type is unknown.
func (c *CloudProvider) instanceTypeOf(ctx context.Context, inst *instance.Instance) *scheduling.InstanceType {
	name := inst.Tags[awsv1.TagEC2NodeClass]
	if name == "" || c.instanceTypes == nil {
		return nil
	}
	nc, err := c.nodeClassByRef(ctx, &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name}, "instance", inst.ID)
	if err != nil {
		return nil
	}
	it, err := c.instanceTypes.Get(ctx, nc, inst.Type)
	if err != nil {
		return nil
	}
	if pool := inst.Tags[awsv1.TagNodePool]; c.overlays != nil && pool != "" {
		// The capacity as the NodeOverlays of its NodePool extend it, as at
		// launch; before they are evaluated, the type's own.
		if its, err := c.overlays.ApplyAll(pool, []*scheduling.InstanceType{it}); err == nil && len(its) == 1 {
			it = its[0]
		}
	}
	return it
}

// Get returns the NodeClaim view of the instance with this provider ID, or a
// *cloudprovider.NodeClaimNotFoundError when it does not exist or terminated.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	if c.instances == nil {
		return nil, errNoInstances
	}
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := c.instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.toNodeClaim(inst, c.instanceTypeOf(ctx, inst)), nil
}

// List returns the cluster's Karpenter instances that are not terminated,
// named after the NodeClaim they are tagged with (once tagged).
func (c *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	if c.instances == nil {
		return nil, errNoInstances
	}
	insts, err := c.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].ID < insts[j].ID })
	out := make([]*v1.NodeClaim, 0, len(insts))
	for _, inst := range insts {
		out = append(out, c.toNodeClaim(inst, nil))
	}
	return out, nil
}

// Delete terminates the NodeClaim's instance: nil while it shuts down, a
// *cloudprovider.NodeClaimNotFoundError once it is gone (or was never
// recorded on the NodeClaim).
// Reboot restarts the NodeClaim's instance in place (ec2:RebootInstances).
func (c *CloudProvider) Reboot(ctx context.Context, nodeClaim *v1.NodeClaim, operationID string) error {
	if c.instances == nil {
		return errNoInstances
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(err)
	}
	return c.instances.Reboot(ctx, id, operationID)
}

func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if c.instances == nil {
		return errNoInstances
	}
	if nodeClaim.Status.ProviderID == "" {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("NodeClaim %s has no providerID: no instance was recorded for it", nodeClaim.Name))
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(err)
	}
	return c.instances.Delete(ctx, id)
}
