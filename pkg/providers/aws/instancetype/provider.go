package instancetype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// CacheTTL is how long EC2's instance types and offerings, and the instance
// types resolved for a class, are reused (upstream's
// InstanceTypesZonesAndOfferingsTTL).
const CacheTTL = 5 * time.Minute

// Options are the operator settings that change instance types.
type Options struct {
	// Region of the EC2 API, the topology.kubernetes.io/region label.
	Region string
	// VMMemoryOverheadPercent (VM_MEMORY_OVERHEAD_PERCENT, upstream 0.075) is
	// the share of memory the hypervisor keeps.
	VMMemoryOverheadPercent float64
	// ReservedENIs (RESERVED_ENIS, upstream 0) are ENIs kept from the VPC
	// CNI, lowering the ENI-limited pod count.
	ReservedENIs int
	// NodeClassCEL (AWS feature gate NodeClassCEL): the CEL expressions of
	// an EC2NodeClass's kubelet (a string maxPods, reserved values that are
	// not quantities) are evaluated per instance type. Off, they are not
	// honoured: the family's defaults apply in their place.
	NodeClassCEL bool
	// DisableReservedCapacity (feature gate ReservedCapacity=false): no
	// reserved offerings, whatever reservations a class holds.
	DisableReservedCapacity bool
	// ZonalShifts (ENABLE_ZONAL_SHIFT) tells the zones traffic is shifted
	// away from; their offerings are unavailable while the shift lasts. Nil:
	// no zone is ever shifted.
	ZonalShifts ZonalShifts
	// ReservationCounts tells each reservation's free slots (the capacity
	// reservation provider's Availability). Nil: reservations are not
	// counted, each taken as having room.
	ReservationCounts ReservationCounts
	// OverlayPrices (feature gate NodeOverlay) price the types EC2 has no
	// price for from NodeOverlays. Nil: such types stay unavailable.
	OverlayPrices *OverlayPrices
}

// ZonalShifts are the ARC zonal shifts of the cluster (zonalshift.Provider).
type ZonalShifts interface {
	// IsShifted reports whether traffic is shifted away from the zone id.
	IsShifted(ctx context.Context, zoneID string) bool
	// Seq changes whenever the set of shifted zones changed.
	Seq(ctx context.Context) uint64
}

// ReservationCounts tells how many instances a capacity reservation can still
// take; Seq changes whenever a count does.
type ReservationCounts interface {
	Count(id string) (int, bool)
	Seq() uint64
}

// Provider lists the instance types an EC2NodeClass can launch. It is safe for
// concurrent use.
type Provider struct {
	ec2         *ec2.Client
	prices      *pricing.Provider
	unavailable *UnavailableOfferings
	clock       clock.Clock
	opts        Options

	// mu guards the fields below and serialises EC2 refreshes, so that
	// concurrent callers wait for one DescribeInstanceTypes instead of each
	// making their own.
	mu         sync.Mutex
	infos      []ec2types.InstanceTypeInfo
	infosAt    time.Time
	infosSeq   uint64
	offered    map[string]map[string]bool
	offeredAt  time.Time
	offeredSeq uint64
	resolved   map[string]*resolution

	// discovered is the memory registered nodes reported, which replaces
	// the estimate for later launches of their type (discovered.go).
	discovered *discoveredCapacity

	// pgs resolves placementGroupSelector (nil: classes are listed as if
	// they had none; their launches are refused).
	pgs *placementgroup.Provider
}

// SetPlacementGroups gives the provider the resolver of
// placementGroupSelector: a class's types are then those that support its
// group's strategy, and a partition group's offerings are one per partition.
func (p *Provider) SetPlacementGroups(pgs *placementgroup.Provider) { p.pgs = pgs }

// resolution is what a class resolved to: the price-independent part of every
// type, and the last list built from it with offerings.
type resolution struct {
	expires  time.Time
	types    []baseType
	zones    []zone
	zoneReqs map[string]scheduling.Requirements
	// reservations are the class's status.capacityReservations.
	reservations []awsv1.CapacityReservation
	inZone       map[string]bool
	// amiHash identifies the class's status.amis, under which the memory of
	// its registered nodes was learnt.
	amiHash uint64
	// list was built with these sequence numbers of the ICE cache, prices,
	// discovered capacity, zonal shifts, reservation counts and overlay
	// prices.
	iceSeq, priceSeq, discoveredSeq, shiftSeq, countSeq, overlaySeq uint64
	list                                                            []*scheduling.InstanceType
	// shifted are the zones (by name) traffic was shifted away from when
	// list was built.
	shifted map[string]bool
	// group is the class's placement group (nil: none).
	group *placementgroup.PlacementGroup
}

type baseType struct {
	name          string
	requirements  scheduling.Requirements
	capacity      corev1.ResourceList
	overhead      corev1.ResourceList
	capacityTypes []string
	offered       map[string]bool
}

// NewProvider returns a provider that asks ec2Client about instance types and
// prices offerings with prices.
func NewProvider(ec2Client *ec2.Client, prices *pricing.Provider, unavailable *UnavailableOfferings, clk clock.Clock, opts Options) *Provider {
	return &Provider{ec2: ec2Client, prices: prices, unavailable: unavailable, clock: clk, opts: opts, resolved: map[string]*resolution{},
		discovered: newDiscoveredCapacity(clk)}
}

// List returns every instance type the class can launch, sorted by name, with
// one offering per subnet zone and capacity type. The InstanceTypes are shared
// between callers and must not be modified.
func (p *Provider) List(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*scheduling.InstanceType, error) {
	if len(nc.Status.Subnets) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %q has no resolved subnets (status.subnets is empty), so no zone can be offered", nc.Name)
	}
	s, err := newSettings(nc)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
	}
	zones := subnetZones(nc.Status.Subnets)
	var group *placementgroup.PlacementGroup
	if sel := nc.Spec.PlacementGroupSelector; sel != nil && p.pgs != nil {
		r, err := p.pgs.Resolve(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
		}
		if r.Usable() {
			group = r.Group
		}
	}

	// Listed before taking the lock: a slow API server holds up no other
	// caller's cached answer.
	overlay, overlaySeq := p.opts.OverlayPrices.current(ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	now := p.clock.Now()
	for k, r := range p.resolved {
		if !now.Before(r.expires) {
			delete(p.resolved, k)
		}
	}
	// The AMIs are part of the key as in upstream's: what nodes taught about
	// memory holds for the AMIs they run, so a class with other AMIs must not
	// share the list.
	amiHash := amiSetHash(nc.Status.AMIs)
	key := fmt.Sprintf("%016x-%016x-%d-%d", classHash(nc, zones), amiHash, p.infosSeq, p.offeredSeq)
	if group != nil {
		key += fmt.Sprintf("-%s-%s-%d", group.ID, group.Strategy, group.PartitionCount)
	}
	res, ok := p.resolved[key]
	if !ok {
		res, err = p.resolve(ctx, s, zones)
		if err != nil {
			return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
		}
		if group != nil {
			res.group = group
			res.types = p.supportingStrategy(res.types, group.Strategy)
		}
		res.amiHash = amiHash
		if !p.opts.DisableReservedCapacity {
			res.reservations = classReservations(nc)
		}
		res.inZone = map[string]bool{}
		for _, z := range zones {
			res.inZone[z.name] = true
		}
		for i := range res.types {
			res.types[i].requirements = withReservations(res.types[i].requirements, res.types[i].name, res.reservations, res.inZone)
		}
		res.expires = now.Add(CacheTTL)
		p.resolved[key] = res
	}
	iceSeq, priceSeq, discoveredSeq, shiftSeq := p.unavailable.SeqNum(), p.prices.SeqNum(), p.discovered.seq.Load(), p.shiftSeq(ctx)
	var countSeq uint64
	if p.opts.ReservationCounts != nil && len(res.reservations) > 0 {
		countSeq = p.opts.ReservationCounts.Seq()
	}
	if res.list == nil || res.iceSeq != iceSeq || res.priceSeq != priceSeq || res.discoveredSeq != discoveredSeq || res.shiftSeq != shiftSeq || res.countSeq != countSeq ||
		res.overlaySeq != overlaySeq {
		res.shifted = p.shiftedZones(ctx, res.zones)
		res.list = p.withOfferings(res, overlay)
		res.iceSeq, res.priceSeq, res.discoveredSeq, res.shiftSeq, res.countSeq, res.overlaySeq = iceSeq, priceSeq, discoveredSeq, shiftSeq, countSeq, overlaySeq
	}
	return append([]*scheduling.InstanceType(nil), res.list...), nil
}

func (p *Provider) shiftSeq(ctx context.Context) uint64 {
	if p.opts.ZonalShifts == nil {
		return 0
	}
	return p.opts.ZonalShifts.Seq(ctx)
}

// shiftedZones are the zones of the class (by name) traffic is shifted away
// from: ARC names zones by id, the class's subnets give each zone's id.
func (p *Provider) shiftedZones(ctx context.Context, zones []zone) map[string]bool {
	if p.opts.ZonalShifts == nil {
		return nil
	}
	out := map[string]bool{}
	for _, z := range zones {
		if p.opts.ZonalShifts.IsShifted(ctx, z.id) {
			out[z.name] = true
		}
	}
	return out
}

// Get returns one instance type of the class, or an error when the class
// cannot launch it.
func (p *Provider) Get(ctx context.Context, nc *awsv1.EC2NodeClass, name string) (*scheduling.InstanceType, error) {
	its, err := p.List(ctx, nc)
	if err != nil {
		return nil, err
	}
	i := sort.Search(len(its), func(i int) bool { return its[i].Name >= name })
	if i == len(its) || its[i].Name != name {
		return nil, fmt.Errorf("instance type %q is not offered by EC2 in %s", name, p.opts.Region)
	}
	return its[i], nil
}

// refresh refetches what is older than CacheTTL. A failed refetch keeps the
// data known before (logged); it fails only when there is none.
func (p *Provider) refresh(ctx context.Context) error {
	now := p.clock.Now()
	if p.infos == nil || !now.Before(p.infosAt.Add(CacheTTL)) {
		if err := p.updateInstanceTypes(ctx); err != nil {
			if p.infos == nil {
				return err
			}
			log.FromContext(ctx).Error(err, "refreshing instance types, using the ones known", "age", now.Sub(p.infosAt))
		}
	}
	if p.offered == nil || !now.Before(p.offeredAt.Add(CacheTTL)) {
		if err := p.updateOfferings(ctx); err != nil {
			if p.offered == nil {
				return err
			}
			log.FromContext(ctx).Error(err, "refreshing instance type offerings, using the ones known", "age", now.Sub(p.offeredAt))
		}
	}
	return nil
}

// updateInstanceTypes describes every HVM x86_64/arm64 instance type.
func (p *Provider) updateInstanceTypes(ctx context.Context) error {
	infos, err := pages.Collect(ctx, ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
	}), func(acc []ec2types.InstanceTypeInfo, page *ec2.DescribeInstanceTypesOutput) []ec2types.InstanceTypeInfo {
		return append(acc, page.InstanceTypes...)
	})
	if err != nil {
		return fmt.Errorf("describing instance types: %w", err)
	}
	if len(infos) == 0 {
		return errors.New("describing instance types: EC2 returned none")
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].InstanceType < infos[j].InstanceType })
	if !reflect.DeepEqual(infos, p.infos) {
		p.infos = infos
		p.infosSeq++
		log.FromContext(ctx).V(1).Info("discovered instance types", "count", len(infos))
	}
	p.infosAt = p.clock.Now()
	return nil
}

// updateOfferings learns which zones offer each type.
func (p *Provider) updateOfferings(ctx context.Context) error {
	offered := map[string]map[string]bool{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			if o.Location == nil {
				continue
			}
			name := string(o.InstanceType)
			if offered[name] == nil {
				offered[name] = map[string]bool{}
			}
			offered[name][*o.Location] = true
		}
	}
	if !reflect.DeepEqual(offered, p.offered) {
		p.offered = offered
		p.offeredSeq++
		log.FromContext(ctx).V(1).Info("discovered instance type offerings", "instanceTypes", len(offered))
	}
	p.offeredAt = p.clock.Now()
	return nil
}

// resolve computes the price-independent part of every type for the class.
func (p *Provider) resolve(ctx context.Context, class *settings, zones []zone) (*resolution, error) {
	res := &resolution{zones: zones, zoneReqs: zoneRequirements(zones), types: make([]baseType, 0, len(p.infos))}
	for i := range p.infos {
		info := &p.infos[i]
		if architecture(info) == "" || !supportsFeatures(info, class) {
			continue
		}
		s, err := class.forType(ctx, info, p.opts)
		if err != nil {
			return nil, fmt.Errorf("instance type %s: %w", info.InstanceType, err)
		}
		name := string(info.InstanceType)
		offered := p.offered[name]
		var typeZones []zone
		for _, z := range zones {
			if offered[z.name] {
				typeZones = append(typeZones, z)
			}
		}
		c := capacity(info, s, p.opts)
		var capacityTypes []string
		for _, uc := range info.SupportedUsageClasses {
			if uc == ec2types.UsageClassTypeOnDemand || uc == ec2types.UsageClassTypeSpot {
				capacityTypes = append(capacityTypes, string(uc))
			}
		}
		res.types = append(res.types, baseType{
			name:          name,
			requirements:  requirements(info, s, p.opts.Region, typeZones),
			capacity:      c,
			overhead:      overhead(info, s, p.opts, c),
			capacityTypes: capacityTypes,
			offered:       offered,
		})
	}
	return res, nil
}

// ErrInstanceTypesUnavailable: EC2's instance types could not be described,
// so nothing was evaluated (try again later).
var ErrInstanceTypesUnavailable = errors.New("instance types are not known yet")

// ValidateKubeletExpressions evaluates the CEL expressions of the class's
// kubelet for every instance type EC2 describes, and returns the first
// failure: a maxPods expression without a result in [0, 2147483647], a
// reserved expression that fails to evaluate or gives a negative result.
// With the NodeClassCEL gate off, or without expressions, it does nothing.
// When the instance types cannot be described it returns
// ErrInstanceTypesUnavailable.
func (p *Provider) ValidateKubeletExpressions(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if !p.opts.NodeClassCEL || !nc.Spec.Kubelet.HasExpressions() {
		return nil
	}
	s, err := newSettings(nc)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrInstanceTypesUnavailable, err)
	}
	// The failures are returned; the dropped reservations need no log.
	quiet := log.IntoContext(ctx, logr.Discard())
	for i := range p.infos {
		if err := s.checkExpressions(quiet, &p.infos[i], p.opts); err != nil {
			return fmt.Errorf("instance type %s: %w", p.infos[i].InstanceType, err)
		}
	}
	return nil
}

// ENILimits are the network interfaces of the default network card of the
// named instance type and the IPv4 addresses of each, from the
// DescribeInstanceTypes answer the provider holds (the values the kubelet
// expressions of scheduling saw); false when the type is not known.
func (p *Provider) ENILimits(name string) (defaultENIs, ipsPerENI int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.infos), func(i int) bool { return string(p.infos[i].InstanceType) >= name })
	if i == len(p.infos) || string(p.infos[i].InstanceType) != name {
		return 0, 0, false
	}
	defaultENIs, ipsPerENI = eniLimits(&p.infos[i])
	return defaultENIs, ipsPerENI, true
}

// supportsFeatures: the type supports the Nitro Enclaves and nested
// virtualization the class asks for.
func supportsFeatures(info *ec2types.InstanceTypeInfo, s *settings) bool {
	if s.nitroEnclaves && info.NitroEnclavesSupport != ec2types.NitroEnclavesSupportSupported {
		return false
	}
	if s.nestedVirtualization {
		if info.ProcessorInfo == nil || !slices.Contains(info.ProcessorInfo.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization) {
			return false
		}
	}
	return supportsInterfaces(info, s.networkInterfaces)
}

// supportsInterfaces: the type has the network cards and device indexes the
// class's interfaces name, ENA, and at least as many EFA interfaces as the
// class has efa-only ones (upstream's checks).
func supportsInterfaces(info *ec2types.InstanceTypeInfo, interfaces []*awsv1.NetworkInterface) bool {
	if interfaces == nil {
		return true
	}
	ni := info.NetworkInfo
	if ni == nil || len(ni.NetworkCards) == 0 || ni.EnaSupport == ec2types.EnaSupportUnsupported {
		return false
	}
	for _, want := range interfaces {
		if int(want.NetworkCardIndex) >= len(ni.NetworkCards) {
			return false
		}
		i := slices.IndexFunc(ni.NetworkCards, func(c ec2types.NetworkCardInfo) bool {
			return c.NetworkCardIndex != nil && *c.NetworkCardIndex == want.NetworkCardIndex
		})
		if i < 0 || ni.NetworkCards[i].MaximumNetworkInterfaces == nil || *ni.NetworkCards[i].MaximumNetworkInterfaces <= want.DeviceIndex {
			return false
		}
	}
	if n := efaOnly(interfaces, -1); n > 0 {
		if ni.EfaInfo == nil || ni.EfaInfo.MaximumEfaInterfaces == nil || int32(n) > *ni.EfaInfo.MaximumEfaInterfaces {
			return false
		}
	}
	return true
}

// withOfferings builds the instance types of a resolution with offerings
// priced (overlay prices the types EC2 has no price for) and checked against
// the ICE cache now, and with the memory a registered node of the type
// reported in place of the estimate.
func (p *Provider) withOfferings(res *resolution, overlay map[string]float64) []*scheduling.InstanceType {
	out := make([]*scheduling.InstanceType, len(res.types))
	for i := range res.types {
		b := &res.types[i]
		out[i] = &scheduling.InstanceType{
			Name:         b.name,
			Requirements: b.requirements,
			Offerings:    p.offeringsOf(b, res, overlay),
			Capacity:     p.capacityOf(b, res),
			Overhead:     b.overhead,
		}
	}
	return out
}

// capacityOf is the type's capacity, its memory the one its registered nodes
// reported when known. As upstream's, only the capacity changes: the
// overhead stays what the estimate gave (its percentage eviction threshold
// included), so allocatable drops by exactly what the estimate overstated.
func (p *Provider) capacityOf(b *baseType, res *resolution) corev1.ResourceList {
	memory, ok := p.discovered.discoveredMemory(b.name, res.amiHash)
	if !ok {
		return b.capacity
	}
	// The base capacity is shared by every list built from the resolution.
	c := make(corev1.ResourceList, len(b.capacity))
	for n, q := range b.capacity {
		c[n] = q
	}
	c[corev1.ResourceMemory] = memory
	return c
}

// subnetZones lists the distinct zones of the subnets, sorted, with their ids
// and subnets.
func subnetZones(subnets []awsv1.Subnet) []zone {
	byName := map[string]*zone{}
	for _, s := range subnets {
		z, ok := byName[s.Zone]
		if !ok {
			z = &zone{name: s.Zone}
			byName[s.Zone] = z
		}
		if z.id == "" {
			z.id = s.ZoneID
		}
		z.subnets = append(z.subnets, s.ID)
	}
	out := make([]zone, 0, len(byName))
	for _, z := range byName {
		sort.Strings(z.subnets)
		out = append(out, *z)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// classHash identifies what of a class shapes its instance types: the AMI
// family, kubelet, block device mappings, instance store policy, zones,
// resolved capacity reservations, enclave and CPU options.
func classHash(nc *awsv1.EC2NodeClass, zones []zone) uint64 {
	type zoneKey struct {
		Name, ID string
		Subnets  []string
	}
	zk := make([]zoneKey, len(zones))
	for i, z := range zones {
		zk[i] = zoneKey{z.name, z.id, z.subnets}
	}
	b, err := json.Marshal(struct {
		Family              string
		Kubelet             *awsv1.KubeletConfiguration
		BlockDeviceMappings []*awsv1.BlockDeviceMapping
		InstanceStorePolicy *awsv1.InstanceStorePolicy
		Zones               []zoneKey
		Reservations        []awsv1.CapacityReservation
		EnclaveOptions      *awsv1.EnclaveOptions     `json:",omitempty"`
		CPUOptions          *awsv1.CPUOptions         `json:",omitempty"`
		NetworkInterfaces   []*awsv1.NetworkInterface `json:",omitempty"`
	}{nc.AMIFamily(), nc.Spec.Kubelet, nc.Spec.BlockDeviceMappings, nc.Spec.InstanceStorePolicy, zk, classReservations(nc), nc.Spec.EnclaveOptions, nc.Spec.CPUOptions, nc.Spec.NetworkInterfaces})
	if err != nil {
		// The spec came from JSON; it always marshals back.
		panic(fmt.Sprintf("hashing EC2NodeClass %s: %v", nc.Name, err))
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// offeringsOf lists a type's spot and on-demand offerings and, for a type the
// class holds reservations for, one reserved offering per reservation. The
// spot and on-demand offerings of such a type then say that they are in no
// reservation, so a NodePool asking for a reservation id cannot land on them.
func (p *Provider) offeringsOf(b *baseType, res *resolution, overlay map[string]float64) []scheduling.Offering {
	out := offerings(b.name, b.capacityTypes, res.zones, b.offered, res.zoneReqs, p.prices, overlay, p.unavailable, res.shifted)
	reserved := reservedOfferings(b.name, res.reservations, res.zoneReqs, res.inZone, p.prices, p.unavailable, res.shifted, p.opts.ReservationCounts)
	if len(reserved) == 0 {
		return p.inGroup(b.name, out, res.group)
	}
	for i := range out {
		out[i].Requirements = out[i].Requirements.With(scheduling.NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpDoesNotExist))
	}
	return p.inGroup(b.name, append(out, reserved...), res.group)
}
