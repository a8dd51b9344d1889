package instance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/batcher"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Instance is an EC2 instance as Karpenter sees it.
type Instance struct {
	ID, Type, ImageID, Zone, ZoneID, CapacityType, SubnetID, State, PrivateDNSName, CapacityReservationID string
	SecurityGroupIDs                                                                                      []string
	LaunchTime                                                                                            time.Time
	Tags                                                                                                  map[string]string

	// Tenancy is the instance's Placement.Tenancy: default or dedicated
	// (EC2 may also answer host).
	Tenancy string

	// PlacementGroupID and PlacementGroupName are the placement group the
	// instance runs in ("" for none); PartitionNumber its partition in a
	// partition group (0: none, or not known yet).
	PlacementGroupID, PlacementGroupName string
	PartitionNumber                      int32

	// EFACount is the instance's EFA interfaces (efa and efa-only), as
	// upstream counts them: at launch, the type's vpc.amazonaws.com/efa
	// capacity when the NodeClaim asks for EFA or the class lists network
	// interfaces (else 0, the template having no EFA interface); from EC2,
	// its interfaces of those types. The NodeClaim advertises the EFA
	// resource only when it is not 0.
	EFACount int
}

// ProviderID is aws:///<zone>/<id>.
func (i *Instance) ProviderID() string { return fmt.Sprintf("aws:///%s/%s", i.Zone, i.ID) }

// ParseProviderID returns the instance id of aws:///<zone>/<id>.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", fmt.Errorf("providerID %q is not of the form aws:///<zone>/<instance-id>", providerID)
	}
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.HasPrefix(id, "i-") || len(id) < 3 {
		return "", fmt.Errorf("providerID %q is not of the form aws:///<zone>/<instance-id>", providerID)
	}
	return id, nil
}

// MaxInstanceTypes is the most instance types one launch offers EC2 (upstream's).
const MaxInstanceTypes = 60

// Options configure a Provider.
type Options struct {
	ClusterName string
	// Batch windows of CreateFleet, DescribeInstances and TerminateInstances
	// (zero = the batcher's defaults).
	Batch batcher.Options
	// ZonalShifts (ENABLE_ZONAL_SHIFT; nil: off) tells the zones traffic is
	// shifted away from. As upstream, instances there are neither terminated
	// nor tagged while the shift lasts: calls into an impaired zone are what
	// the shift is meant to stop, and failing ones would be retried in a
	// storm.
	ZonalShifts ZonalShifts
	// Reservations, when set, learns of every launch into a capacity
	// reservation and every termination out of one, and of EC2 refusing a
	// launch because a reservation is full, so that the offerings built from
	// it count slots taken before EC2's next answer does.
	Reservations ReservationLedger
}

// ZonalShifts answers whether traffic is shifted away from a zone id.
type ZonalShifts interface {
	IsShifted(ctx context.Context, zoneID string) bool
}

// shifted reports whether inst's zone is under a zonal shift.
func (p *Provider) shifted(ctx context.Context, inst *Instance) bool {
	return p.opts.ZonalShifts != nil && inst.ZoneID != "" && p.opts.ZonalShifts.IsShifted(ctx, inst.ZoneID)
}

// ReservationLedger keeps the free slots of capacity reservations (the
// capacity reservation provider's Availability).
type ReservationLedger interface {
	MarkLaunched(id string)
	MarkTerminated(id, instanceID string)
	Set(id string, n int)
}

// Provider launches, describes and terminates instances. Safe for concurrent use.
type Provider struct {
	ec2         *ec2.Client
	batch       *batcher.EC2
	lts         *launchtemplate.Provider
	subnets     *subnet.Provider
	unavailable *instancetype.UnavailableOfferings
	clk         clock.Clock
	opts        Options
	pgs         *placementgroup.Provider
}

// SetPlacementGroups gives the provider the resolver of
// placementGroupSelector. Without one, a class with a selector is not
// launched (its NodeClaims fail naming the field).
func (p *Provider) SetPlacementGroups(pgs *placementgroup.Provider) { p.pgs = pgs }

// NewProvider returns a Provider.
func NewProvider(ec2api *ec2.Client, lts *launchtemplate.Provider, subnets *subnet.Provider, unavailable *instancetype.UnavailableOfferings, clk clock.Clock, opts Options) *Provider {
	return &Provider{ec2: ec2api, batch: batcher.NewEC2(ec2api, opts.Batch), lts: lts, subnets: subnets, unavailable: unavailable, clk: clk, opts: opts}
}

// Requirements of a NodeClaim as scheduling requirements.
func Requirements(nodeClaim *v1.NodeClaim) scheduling.Requirements {
	reqs := make([]scheduling.Requirement, 0, len(nodeClaim.Spec.Requirements))
	for _, r := range nodeClaim.Spec.Requirements {
		req := scheduling.NewRequirement(r.Key, r.Operator, r.Values...)
		req.MinValues = r.MinValues
		reqs = append(reqs, req)
	}
	return scheduling.NewRequirements(reqs...)
}

// Create launches one instance for nodeClaim with one of instanceTypes. tags
// go on the instance, its volumes and the fleet. A launch no offering could
// serve is an *cloudprovider.InsufficientCapacityError.
func (p *Provider) Create(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, tags map[string]string, instanceTypes []*scheduling.InstanceType) (*Instance, error) {
	reqs := Requirements(nodeClaim)
	tenancy, err := Tenancy(reqs)
	if err != nil {
		return nil, cloudprovider.NewCreateError(err, ReasonUnsupportedTenancy, err.Error())
	}
	group, placement, err := p.placement(ctx, nc, reqs)
	if err != nil {
		return nil, err
	}
	capacityType := CapacityType(reqs, instanceTypes)
	its := Candidates(reqs, instanceTypes, capacityType)
	if len(its) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no %s offering of %d instance types is available for requirements %s", capacityType, len(instanceTypes), reqs))
	}
	if capacityType == scheduling.CapacityTypeOnDemand && len(its) < 5 && reqs.Has(scheduling.LabelCapacityType, scheduling.CapacityTypeSpot) {
		log.FromContext(ctx).Info("launching on-demand with few instance types: spot was allowed but no spot offering is available", "instanceTypes", len(its))
	}
	subnets, err := p.subnets.ZonalSubnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, cloudprovider.NewCreateError(err, "SubnetResolutionFailed", fmt.Sprintf("resolving subnets of EC2NodeClass %q: %v", nc.Name, err))
	}
	// Two attempts: a launch template deleted under us is created again once.
	for attempt := 0; ; attempt++ {
		inst, lts, err := p.launch(ctx, nc, nodeClaim, reqs, tags, its, capacityType, tenancy, subnets, group, placement)
		if err != nil && attempt == 0 && isLaunchTemplateNotFound(err) {
			for _, lt := range lts {
				p.lts.Invalidate(ctx, lt.Name, lt.ID)
			}
			continue
		}
		return inst, err
	}
}

func (p *Provider) launch(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, reqs scheduling.Requirements, tags map[string]string,
	its []*scheduling.InstanceType, capacityType, tenancy string, subnets map[string]subnet.Subnet,
	group *placementgroup.PlacementGroup, placement launchtemplate.Placement) (*Instance, []*launchtemplate.Launch, error) {
	lts, err := p.lts.EnsureAllIn(ctx, nc, nodeClaim, its, capacityType, tenancy, placement, tags)
	if err != nil {
		return nil, nil, cloudprovider.NewCreateError(err, "LaunchTemplateCreationFailed", fmt.Sprintf("creating launch templates: %v", err))
	}
	// With prices a NodeOverlay set, EC2 is asked to follow them (as
	// priorities) instead of its own prices, as upstream does.
	_, prioritized := nodeClaim.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]
	in := fleetInput(nc, lts, reqs, tags, capacityType, subnets, prioritized)
	if len(in.LaunchTemplateConfigs) == 0 {
		return nil, lts, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no %s offering of the %d candidate instance types is in a zone with a subnet of EC2NodeClass %q", capacityType, len(its), nc.Name))
	}
	out, err := p.batch.CreateFleet(ctx, in)
	if err != nil {
		if isLaunchTemplateNotFound(err) {
			return nil, lts, err
		}
		code := awserr.Code(err)
		if code == codeSpotServiceLinkedRole && capacityType == scheduling.CapacityTypeSpot {
			// The account cannot create spot's service-linked role: no spot
			// for a while, on-demand next.
			p.unavailable.MarkCapacityTypeUnavailable(scheduling.CapacityTypeSpot)
			return nil, lts, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("creating spot fleet: %w", err))
		}
		if unfulfillable[code] {
			return nil, lts, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("creating fleet: %w", err))
		}
		return nil, lts, cloudprovider.NewCreateError(err, "FleetCreationFailed", fmt.Sprintf("creating fleet: %s", awserr.Message(err)))
	}
	p.markUnavailable(ctx, out.Errors, capacityType, subnets, placement)
	p.markReservationsFull(out.Errors, lts)
	if len(out.Instances) == 0 || len(out.Instances[0].InstanceIds) == 0 {
		return nil, lts, interfacesRefused(nc, out.Errors, fleetError(out.Errors, capacityType))
	}
	fi := out.Instances[0]
	inst := &Instance{
		ID:           fi.InstanceIds[0],
		Type:         string(fi.InstanceType),
		CapacityType: capacityType,
		Tenancy:      tenancy,
		State:        string(ec2types.InstanceStateNamePending),
		LaunchTime:   p.clk.Now(),
		Tags:         tags,
	}
	if lto := fi.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
		inst.Zone = aws.ToString(lto.Overrides.AvailabilityZone)
		inst.SubnetID = aws.ToString(lto.Overrides.SubnetId)
		inst.ImageID = aws.ToString(lto.Overrides.ImageId)
		if inst.Type == "" {
			inst.Type = string(lto.Overrides.InstanceType)
		}
	}
	if _, requested := nodeClaim.Spec.Resources.Requests[awsv1.ResourceEFA]; requested || nc.Spec.NetworkInterfaces != nil {
		for _, it := range its {
			if it.Name == inst.Type {
				q := it.Capacity[awsv1.ResourceEFA]
				inst.EFACount = int(q.Value())
			}
		}
	}
	if lto := fi.LaunchTemplateAndOverrides; lto != nil && lto.LaunchTemplateSpecification != nil {
		for _, lt := range lts {
			if lt.Name == aws.ToString(lto.LaunchTemplateSpecification.LaunchTemplateName) || lt.ID == aws.ToString(lto.LaunchTemplateSpecification.LaunchTemplateId) {
				inst.CapacityReservationID = lt.CapacityReservationID
			}
		}
	}
	if inst.Zone == "" {
		for z, s := range subnets {
			if s.ID == inst.SubnetID {
				inst.Zone = z
			}
		}
	}
	if inst.SubnetID != "" {
		p.subnets.ReserveIPs(inst.SubnetID, 1)
	}
	if group != nil {
		inst.PlacementGroupID, inst.PlacementGroupName, inst.PartitionNumber = group.ID, group.Name, placement.Partition
		if group.Strategy == placementgroup.StrategyPartition && inst.PartitionNumber == 0 {
			// EC2 chose the partition: the instance tells which.
			if described, err := p.Get(ctx, inst.ID); err == nil {
				inst.PartitionNumber = described.PartitionNumber
			} else {
				log.FromContext(ctx).Info("reading the partition of a launched instance", "instance", inst.ID, "placementGroup", group.Name, "error", err)
			}
		}
	}
	if inst.CapacityReservationID != "" && p.opts.Reservations != nil {
		p.opts.Reservations.MarkLaunched(inst.CapacityReservationID)
	}
	// A launch that worked proves the pool has capacity again.
	p.unavailable.Delete(capacityType, inst.Type, inst.Zone)
	return inst, lts, nil
}

// markReservationsFull records a reservation EC2 refused for want of a free
// slot as having none, until EC2 next tells its figure.
func (p *Provider) markReservationsFull(errs []ec2types.CreateFleetError, lts []*launchtemplate.Launch) {
	if p.opts.Reservations == nil {
		return
	}
	for _, e := range errs {
		if aws.ToString(e.ErrorCode) != "ReservationCapacityExceeded" || e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.LaunchTemplateSpecification == nil {
			continue
		}
		spec := e.LaunchTemplateAndOverrides.LaunchTemplateSpecification
		for _, lt := range lts {
			if lt.CapacityReservationID != "" && (lt.Name == aws.ToString(spec.LaunchTemplateName) || lt.ID == aws.ToString(spec.LaunchTemplateId)) {
				p.opts.Reservations.Set(lt.CapacityReservationID, 0)
			}
		}
	}
}

// ReasonUnsupportedTenancy is the launch failure of a NodeClaim whose
// requirements allow no tenancy Karpenter launches (default or dedicated).
const ReasonUnsupportedTenancy = "UnsupportedTenancy"

// Tenancy chooses the tenancy of a launch as upstream does: default when the
// requirements allow it (or say nothing of karpenter.k8s.aws/instance-tenancy),
// else dedicated when they allow that. Requirements that allow neither
// (e.g. In [host], NotIn [default, dedicated], DoesNotExist) are an error
// naming what was asked: no tenancy is guessed.
func Tenancy(reqs scheduling.Requirements) (string, error) {
	r, ok := reqs.Get(awsv1.LabelInstanceTenancy)
	if !ok {
		return awsv1.InstanceTenancyDefault, nil
	}
	for _, t := range []string{awsv1.InstanceTenancyDefault, awsv1.InstanceTenancyDedicated} {
		if r.Has(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("requirement %s %s allows no tenancy Karpenter launches (%s or %s; host, a Dedicated Host, is not supported): nothing is launched",
		awsv1.LabelInstanceTenancy, r, awsv1.InstanceTenancyDefault, awsv1.InstanceTenancyDedicated)
}

// CapacityType chooses as upstream: reserved when the requirements allow it
// and a reserved offering is available, else spot likewise, else on-demand.
func CapacityType(reqs scheduling.Requirements, its []*scheduling.InstanceType) string {
	for _, ct := range []string{scheduling.CapacityTypeReserved, scheduling.CapacityTypeSpot} {
		if !reqs.Has(scheduling.LabelCapacityType, ct) {
			continue
		}
		for _, it := range its {
			for i := range it.Offerings {
				if o := &it.Offerings[i]; o.CapacityType == ct && offeringCompatible(o, reqs) {
					return ct
				}
			}
		}
	}
	return scheduling.CapacityTypeOnDemand
}

func offeringCompatible(o *scheduling.Offering, reqs scheduling.Requirements) bool {
	if !o.Launchable() || !reqs.Has(scheduling.LabelZone, o.Zone) || !reqs.Has(scheduling.LabelCapacityType, o.CapacityType) {
		return false
	}
	return o.Requirements.Len() == 0 || reqs.Intersects(o.Requirements) == nil
}

// Candidates are the instance types with an available offering of
// capacityType compatible with reqs, cheapest such offering first (ties by
// name), at most MaxInstanceTypes.
func Candidates(reqs scheduling.Requirements, its []*scheduling.InstanceType, capacityType string) []*scheduling.InstanceType {
	type cand struct {
		it    *scheduling.InstanceType
		price float64
	}
	var cs []cand
	for _, it := range its {
		if !reqs.Has(corev1.LabelInstanceTypeStable, it.Name) {
			continue
		}
		best, ok := 0.0, false
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.CapacityType == capacityType && offeringCompatible(o, reqs) && (!ok || o.Price < best) {
				best, ok = o.Price, true
			}
		}
		if ok {
			cs = append(cs, cand{it, best})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].price != cs[j].price {
			return cs[i].price < cs[j].price
		}
		return cs[i].it.Name < cs[j].it.Name
	})
	out := make([]*scheduling.InstanceType, 0, min(len(cs), MaxInstanceTypes))
	for i := 0; i < len(cs) && i < MaxInstanceTypes; i++ {
		out = append(out, cs[i].it)
	}
	return out
}

// fleetInput is one instant fleet over every (template, instance type, zone)
// pool. It holds nothing specific to one NodeClaim, so that concurrent
// launches of the same shape batch into one call.
//
// prioritized (a NodeOverlay priced an instance type of the NodeClaim):
// each override carries its offering's price, as the overlays set it, as
// its priority, and the allocation strategy is prioritized (on-demand) or
// capacity-optimized-prioritized (spot), so that EC2 launches in the order
// of the overlaid prices rather than of its own.
func fleetInput(nc *awsv1.EC2NodeClass, lts []*launchtemplate.Launch, reqs scheduling.Requirements, tags map[string]string,
	capacityType string, subnets map[string]subnet.Subnet, prioritized bool) *ec2.CreateFleetInput {
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	// One fleet buys one market: capacity blocks and other reservations
	// do not mix; the first template's kind wins.
	block := capacityType == scheduling.CapacityTypeReserved && len(lts) > 0 && lts[0].CapacityReservationType == awsv1.CapacityReservationTypeCapacityBlock
	for _, lt := range lts {
		if capacityType == scheduling.CapacityTypeReserved && (lt.CapacityReservationType == awsv1.CapacityReservationTypeCapacityBlock) != block {
			continue
		}
		var overrides []ec2types.FleetLaunchTemplateOverridesRequest
		for _, it := range lt.InstanceTypes {
			zones := map[string]bool{}
			for i := range it.Offerings {
				o := &it.Offerings[i]
				if o.CapacityType != capacityType || !offeringCompatible(o, reqs) || zones[o.Zone] {
					continue
				}
				// A reservation's template launches in that reservation's pool only.
				if lt.CapacityReservationID != "" && !o.Requirements.Has(awsv1.LabelCapacityReservationID, lt.CapacityReservationID) {
					continue
				}
				s, ok := subnets[o.Zone]
				if !ok {
					continue
				}
				zones[o.Zone] = true
				override := ec2types.FleetLaunchTemplateOverridesRequest{
					InstanceType:     ec2types.InstanceType(it.Name),
					SubnetId:         aws.String(s.ID),
					AvailabilityZone: aws.String(o.Zone),
					ImageId:          aws.String(lt.ImageID),
				}
				if prioritized {
					override.Priority = aws.Float64(o.Price)
				}
				overrides = append(overrides, override)
			}
		}
		if len(overrides) == 0 {
			continue
		}
		sort.Slice(overrides, func(i, j int) bool {
			a, b := overrides[i], overrides[j]
			if a.InstanceType != b.InstanceType {
				return a.InstanceType < b.InstanceType
			}
			return aws.ToString(a.AvailabilityZone) < aws.ToString(b.AvailabilityZone)
		})
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(lt.Name), Version: aws.String("$Latest"),
			},
			Overrides: overrides,
		})
	}
	// Reserved capacity is bought as on-demand (or capacity-block) through
	// templates that target the reservation.
	fleetCT := ec2types.DefaultTargetCapacityTypeOnDemand
	switch {
	case capacityType == scheduling.CapacityTypeSpot:
		fleetCT = ec2types.DefaultTargetCapacityTypeSpot
	case block:
		fleetCT = ec2types.DefaultTargetCapacityTypeCapacityBlock
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		Context:               nc.Spec.Context,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			DefaultTargetCapacityType: fleetCT,
			TotalTargetCapacity:       aws.Int32(1),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: launchtemplate.EC2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: launchtemplate.EC2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: launchtemplate.EC2Tags(tags)},
		},
	}
	switch {
	case capacityType == scheduling.CapacityTypeSpot && prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case capacityType == scheduling.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}
