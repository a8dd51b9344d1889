package aws

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Drift reasons, as upstream names them (the Drifted condition's reason).
const (
	// NodeClassDrift: the EC2NodeClass's static fields changed since launch
	// (the hash annotations differ under the same hash version).
	NodeClassDrift cloudprovider.DriftReason = "NodeClassDrift"
	// AMIDrift: the instance runs an image that is no longer the one the
	// EC2NodeClass resolves for its instance type.
	AMIDrift cloudprovider.DriftReason = "AMIDrift"
	// SubnetDrift: the instance's subnet is no longer selected.
	SubnetDrift cloudprovider.DriftReason = "SubnetDrift"
	// SecurityGroupDrift: the instance's security groups are not exactly
	// the selected ones.
	SecurityGroupDrift cloudprovider.DriftReason = "SecurityGroupDrift"
	// CapacityReservationDrift: the instance runs in a capacity reservation
	// the EC2NodeClass no longer selects.
	CapacityReservationDrift cloudprovider.DriftReason = "CapacityReservationDrift"
	// PlacementGroupDrift: the instance is not in the placement group the
	// EC2NodeClass's placementGroupSelector resolves to (the selector was
	// added, removed or now resolves to another group).
	PlacementGroupDrift cloudprovider.DriftReason = "PlacementGroupDrift"
)

// Drift answers CloudProvider.IsDrifted: whether a NodeClaim's instance
// still matches its EC2NodeClass and, if not, why.
type Drift struct {
	kubeClient    client.Client
	instances     *instance.Provider
	instanceTypes *instancetype.Provider
	pgs           *placementgroup.Provider
}

// SetPlacementGroups gives the drift check the resolver of
// placementGroupSelector (nil: placement groups are not checked).
func (d *Drift) SetPlacementGroups(pgs *placementgroup.Provider) { d.pgs = pgs }

// NewDrift returns the drift check. instanceTypes may be nil: the
// NodeClaim's labels then stand for its instance type's requirements.
func NewDrift(kubeClient client.Client, instances *instance.Provider, instanceTypes *instancetype.Provider) *Drift {
	return &Drift{kubeClient: kubeClient, instances: instances, instanceTypes: instanceTypes}
}

// WithDrift makes the provider answer IsDrifted with d.
func WithDrift(d *Drift) Option { return func(c *CloudProvider) { c.drift = d } }

// IsDrifted: the hash comparison needs no AWS call and comes first; the
// others compare the instance (DescribeInstances) with the class's resolved
// status. A class that is missing, being deleted or not resolved yet drifts
// nothing: a NodeClaim is not replaced for what cannot be launched anyway.
// A nil Drift drifts nothing.
func (d *Drift) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	if d == nil {
		return "", nil
	}
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return "", nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := d.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("getting EC2NodeClass %q of NodeClaim %s: %w", ref.Name, nodeClaim.Name, err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return "", nil
	}
	if reason := StaticDrift(nodeClaim, nc); reason != "" {
		return reason, nil
	}
	if nodeClaim.Status.ProviderID == "" {
		return "", nil
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", fmt.Errorf("NodeClaim %s: %w", nodeClaim.Name, err)
	}
	inst, err := d.instances.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("getting the instance of NodeClaim %s: %w", nodeClaim.Name, err)
	}
	reqs, err := d.instanceTypeRequirements(ctx, nc, nodeClaim)
	if err != nil {
		return "", err
	}
	if reason, err := InstanceDrift(inst, reqs, nc); reason != "" || err != nil {
		return reason, err
	}
	return d.placementGroupDrift(ctx, inst, nc)
}

// placementGroupDrift compares the instance's placement group with the one
// the class's selector resolves to now ("" without a selector). A selector
// that resolves to no available group drifts nothing: the class cannot
// launch a replacement.
func (d *Drift) placementGroupDrift(ctx context.Context, inst *instance.Instance, nc *awsv1.EC2NodeClass) (cloudprovider.DriftReason, error) {
	if d.pgs == nil {
		return "", nil
	}
	want := ""
	if sel := nc.Spec.PlacementGroupSelector; sel != nil {
		res, err := d.pgs.Resolve(ctx, sel)
		if err != nil {
			return "", fmt.Errorf("resolving the placement group of EC2NodeClass %s: %w", nc.Name, err)
		}
		if !res.Usable() {
			return "", nil
		}
		want = res.Group.ID
	}
	if inst.PlacementGroupID != want {
		return PlacementGroupDrift, nil
	}
	return "", nil
}

// instanceTypeRequirements are the requirements of the NodeClaim's instance
// type as the EC2NodeClass offers it; the NodeClaim's labels (which carry the
// instance type's) when the type is no longer offered.
func (d *Drift) instanceTypeRequirements(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim) (scheduling.Requirements, error) {
	name := nodeClaim.Labels[corev1.LabelInstanceTypeStable]
	if d.instanceTypes != nil && name != "" {
		its, err := d.instanceTypes.List(ctx, nc)
		if err != nil {
			return scheduling.Requirements{}, fmt.Errorf("listing instance types of EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, it := range its {
			if it.Name == name {
				return it.Requirements, nil
			}
		}
	}
	return scheduling.FromLabels(nodeClaim.Labels), nil
}

// StaticDrift compares the hash annotations of a NodeClaim and its
// EC2NodeClass. Hashes of different versions were computed differently and
// say nothing; a missing annotation says nothing either.
func StaticDrift(nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass) cloudprovider.DriftReason {
	classHash, ok1 := nc.Annotations[awsv1.AnnotationEC2NodeClassHash]
	classVersion, ok2 := nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	claimHash, ok3 := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	claimVersion, ok4 := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	if !ok1 || !ok2 || !ok3 || !ok4 || classVersion != claimVersion {
		return ""
	}
	if classHash != claimHash {
		return NodeClassDrift
	}
	return ""
}

// InstanceDrift compares a launched instance with the EC2NodeClass's
// resolved status, in upstream's order: AMI, security groups, subnet,
// capacity reservation. itReqs are the requirements of the instance's type
// (which AMI variant it boots). A status part that is empty is an error, not
// drift: the class is not resolved and drift would replace every node.
func InstanceDrift(inst *instance.Instance, itReqs scheduling.Requirements, nc *awsv1.EC2NodeClass) (cloudprovider.DriftReason, error) {
	if len(nc.Status.AMIs) == 0 {
		return "", fmt.Errorf("EC2NodeClass %s has no resolved AMIs (status.amis) to check instance %s against", nc.Name, inst.ID)
	}
	if len(nc.Status.SecurityGroups) == 0 {
		return "", fmt.Errorf("EC2NodeClass %s has no resolved security groups (status.securityGroups) to check instance %s against", nc.Name, inst.ID)
	}
	if len(nc.Status.Subnets) == 0 {
		return "", fmt.Errorf("EC2NodeClass %s has no resolved subnets (status.subnets) to check instance %s against", nc.Name, inst.ID)
	}
	if want := AMIFor(itReqs, nc.Status.AMIs); want != inst.ImageID {
		return AMIDrift, nil
	}
	if !sameSet(inst.SecurityGroupIDs, securityGroupIDs(nc)) {
		return SecurityGroupDrift, nil
	}
	if !containsSubnet(nc, inst.SubnetID) {
		return SubnetDrift, nil
	}
	if inst.CapacityReservationID != "" && !containsReservation(nc, inst.CapacityReservationID) {
		return CapacityReservationDrift, nil
	}
	return "", nil
}

// AMIFor is the AMI an instance type of these requirements launches with:
// the first of the status's AMIs (newest first, deprecated last) whose
// requirements it meets, "" when none.
func AMIFor(itReqs scheduling.Requirements, amis []awsv1.AMI) string {
	for _, ami := range amis {
		if itReqs.Compatible(scheduling.FromNodeSelectorRequirements(ami.Requirements...), nil) == nil {
			return ami.ID
		}
	}
	return ""
}

func securityGroupIDs(nc *awsv1.EC2NodeClass) []string {
	out := make([]string, 0, len(nc.Status.SecurityGroups))
	for _, sg := range nc.Status.SecurityGroups {
		out = append(out, sg.ID)
	}
	return out
}

func containsSubnet(nc *awsv1.EC2NodeClass, id string) bool {
	for _, s := range nc.Status.Subnets {
		if s.ID == id {
			return true
		}
	}
	return false
}

func containsReservation(nc *awsv1.EC2NodeClass, id string) bool {
	for _, cr := range nc.Status.CapacityReservations {
		if cr.ID == id {
			return true
		}
	}
	return false
}

// sameSet compares two ID lists as sets.
func sameSet(a, b []string) bool {
	as := make(map[string]bool, len(a))
	for _, x := range a {
		as[x] = true
	}
	bs := make(map[string]bool, len(b))
	for _, x := range b {
		if !as[x] {
			return false
		}
		bs[x] = true
	}
	return len(as) == len(bs)
}
