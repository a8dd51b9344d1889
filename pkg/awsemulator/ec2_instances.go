package awsemulator

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Instance is an EC2 instance launched through CreateFleet.
//
// States advance as lifecycle.go describes: "pending" when created, "running" once
// Options.BootDelay has passed (observed by DescribeInstances, Instances() or the
// emulator's tick); TerminateInstances makes it "shutting-down", BootDelay later
// "terminated". SetInstanceState forces a state.
type Instance struct {
	ID                 string
	InstanceType       string
	Architecture       string
	Zone               string
	ZoneID             string
	SubnetID           string
	VPCID              string
	ImageID            string
	CapacityType       string // "spot" | "on-demand"
	State              string // pending | running | shutting-down | terminated | stopping | stopped
	LaunchTime         time.Time
	PrivateIP          string
	PrivateDNSName     string
	SecurityGroupIDs   []string
	InstanceProfileARN string
	LaunchTemplateID   string
	LaunchTemplateName string
	UserData           string // base64, from the launch template
	Tags               map[string]string
	ReservationID      string
	// CapacityReservationID is the capacity reservation the instance runs in: its launch
	// template targeted one. The instance holds one of its slots until it terminates.
	CapacityReservationID string
	FleetID               string
	SpotRequestID         string
	// MetadataOptions are the launch template's MetadataOptions.* (HttpTokens, HttpPutResponseHopLimit, ...).
	MetadataOptions map[string]string
	// Tenancy is the Placement.Tenancy the instance launched with: the fleet
	// override's, else the launch template's, else "default".
	Tenancy string
	// Boots counts the times the instance booted: 1 once running, one more per
	// RebootInstances that came back. Its Node's boot ID names it (BootID).
	Boots int
	// RebootHangs: a RebootInstances is accepted but the instance never comes
	// back from it (its Node keeps its boot ID). See SetRebootHangs.
	RebootHangs bool
	// PlacementGroupName and PlacementGroupID are the placement group the
	// instance launched into ("" = none); PartitionNumber its partition in
	// a partition group (0 = none).
	PlacementGroupName string
	PlacementGroupID   string
	PartitionNumber    int
	// NetworkInterfaces are the interfaces the launch template asked for
	// (none: the default primary interface), in the instance's subnet.
	NetworkInterfaces []LaunchInterface
}

// BootID is the boot ID the instance's Node reports for its current boot.
func (in *Instance) BootID() string { return fmt.Sprintf("%s-boot-%d", in.ID, max(in.Boots, 1)) }

var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

func (s *state) observeInstances() { s.advance(s.now()) }

func (in *Instance) clone() Instance {
	cp := *in
	cp.Tags = cloneTags(in.Tags)
	cp.MetadataOptions = cloneTags(in.MetadataOptions)
	cp.SecurityGroupIDs = append([]string(nil), in.SecurityGroupIDs...)
	cp.NetworkInterfaces = append([]LaunchInterface(nil), in.NetworkInterfaces...)
	return cp
}

// Instances returns every instance (terminated ones included) sorted by launch order;
// like DescribeInstances it advances pending -> running and shutting-down -> terminated.
func (e *Emulator) Instances() []Instance {
	var out []Instance
	e.locked(func(s *state) {
		s.observeInstances()
		for _, id := range s.instanceOrder {
			out = append(out, s.instances[id].clone())
		}
	})
	return out
}

// SetInstanceState forces an instance's state (e.g. "stopped", "terminated" for a spot
// reclaim). A terminated instance frees its subnet address.
func (e *Emulator) SetInstanceState(id, st string) error {
	if _, ok := stateCodes[st]; !ok {
		return fmt.Errorf("unknown instance state %q", st)
	}
	var err error
	e.locked(func(s *state) {
		in := s.instances[id]
		if in == nil {
			err = fmt.Errorf("instance %s does not exist", id)
			return
		}
		if st == "terminated" || st == "shutting-down" {
			s.releaseAddress(in)
		}
		s.setState(in, st, s.now())
	})
	return err
}

func (s *state) releaseAddress(in *Instance) {
	if in.State == "terminated" || in.State == "shutting-down" {
		return
	}
	if sn := s.subnets[in.SubnetID]; sn != nil {
		sn.AvailableIPs++
	}
	// Its reservation slot is free again.
	if cr := s.capacityReservations[in.CapacityReservationID]; cr != nil && cr.AvailableInstanceCount < cr.TotalInstanceCount {
		cr.AvailableInstanceCount++
	}
}

// --- CreateFleet (instant) ---

type fleetCandidate struct {
	lt           *LaunchTemplate
	ltVersion    string
	instanceType string
	subnet       *Subnet
	zone         string
	imageID      string
	priority     float64 // lower first; +Inf when unset
	reservation  string  // the capacity reservation the launch template targets, if any
	price        float64
	tenancy      string            // override's Placement.Tenancy, else the template's, else default
	placement    placementRef      // override's Placement.GroupName, else the template's placement group
	group        *PlacementGroup   // set by unfulfillable when the pool launches into a group
	partition    int               // the partition of group it launches into (partition groups)
	overrides    map[string]string // as sent, for the answer's launchTemplateAndOverrides
}

type fleetError struct {
	cand      *fleetCandidate
	code, msg string
	capacity  string
}

type fleetLaunch struct {
	cand *fleetCandidate
	ids  []string
}

func ec2CreateFleet(c *call) (any, error) {
	for k, v := range formMap(c) {
		if strings.HasPrefix(k, "LaunchTemplateConfigs.") && strings.HasSuffix(k, ".Placement.Tenancy") {
			if err := checkTenancy(v, "placement.tenancy"); err != nil {
				return nil, err
			}
		}
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	if t := c.str("Type"); t != "instant" {
		return nil, errorf(400, "UnsupportedOperation", "The emulator implements instant fleets only (Type=%q).", t)
	}
	total, _, apiErr := c.integer("TargetCapacitySpecification.TotalTargetCapacity")
	if apiErr != nil {
		return nil, apiErr
	}
	if total < 1 {
		return nil, errorf(400, "InvalidTargetCapacitySpecification", "TotalTargetCapacity should be greater than 0")
	}
	capacityType := c.str("TargetCapacitySpecification.DefaultTargetCapacityType")
	switch capacityType {
	case "spot", "on-demand":
	case "":
		capacityType = "on-demand"
	default:
		return nil, errorf(400, "UnsupportedOperation", "The emulator does not implement DefaultTargetCapacityType %q.", capacityType)
	}
	strategy := c.str("OnDemandOptions.AllocationStrategy")
	if capacityType == "spot" {
		strategy = c.str("SpotOptions.AllocationStrategy")
	}
	form := formMap(c)
	tags := tagSpecs(form, "TagSpecification")
	configs := c.count("LaunchTemplateConfigs")
	if configs == 0 {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter LaunchTemplateConfigs")
	}

	var out xb
	c.e.locked(func(s *state) {
		var cands []*fleetCandidate
		for i := 1; i <= configs; i++ {
			p := "LaunchTemplateConfigs." + strconv.Itoa(i)
			lt, err := s.findLaunchTemplate(form[p+".LaunchTemplateSpecification.LaunchTemplateId"], form[p+".LaunchTemplateSpecification.LaunchTemplateName"])
			if err != nil {
				apiErr = err
				return
			}
			version := form[p+".LaunchTemplateSpecification.Version"]
			for j := 1; j <= max(1, c.count(p+".Overrides")); j++ {
				op := p + ".Overrides." + strconv.Itoa(j) + "."
				ov := map[string]string{}
				for k, v := range form {
					if rest, ok := strings.CutPrefix(k, op); ok {
						ov[rest] = v
					}
				}
				cands = append(cands, s.fleetCandidate(lt, version, ov, capacityType))
			}
		}
		sortCandidates(cands, strategy)

		fleetID := "fleet-" + uuidLike("fleet", s.nextSeq())
		reservationID := hexID("r", "reservation", fleetID)
		var errs []fleetError
		var launches []fleetLaunch
		remaining := total
		for _, cand := range cands {
			if remaining == 0 {
				break
			}
			if code, msg := s.unfulfillable(cand, capacityType); code != "" {
				errs = append(errs, fleetError{cand, code, msg, capacityType})
				continue
			}
			n := min(remaining, cand.subnet.AvailableIPs)
			cr := s.capacityReservations[cand.reservation]
			if cr != nil {
				n = min(n, cr.AvailableInstanceCount)
			}
			l := fleetLaunch{cand: cand}
			for k := 0; k < n; k++ {
				in := s.launch(cand, capacityType, fleetID, reservationID, tags["instance"])
				if cr != nil {
					in.CapacityReservationID = cr.ID
					cr.AvailableInstanceCount--
				}
				l.ids = append(l.ids, in.ID)
			}
			remaining -= n
			launches = append(launches, l)
		}
		out.leafAlways("fleetId", fleetID)
		out.open("errorSet")
		for _, fe := range errs {
			out.open("item")
			writeLaunchTemplateAndOverrides(&out, fe.cand)
			out.leafAlways("lifecycle", fe.capacity)
			out.leafAlways("errorCode", fe.code)
			out.leafAlways("errorMessage", fe.msg)
			out.close("item")
		}
		out.close("errorSet")
		out.open("fleetInstanceSet")
		for _, l := range launches {
			out.open("item")
			writeLaunchTemplateAndOverrides(&out, l.cand)
			out.leafAlways("lifecycle", capacityType)
			out.stringList("instanceIds", "item", l.ids)
			out.leafAlways("instanceType", l.cand.instanceType)
			out.close("item")
		}
		out.close("fleetInstanceSet")
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return out.body(), nil
}

func (s *state) findLaunchTemplate(id, name string) (*LaunchTemplate, *apiError) {
	for _, lt := range s.launchTemplates {
		if (id != "" && lt.ID == id) || (id == "" && name != "" && lt.Name == name) {
			return lt, nil
		}
	}
	if id != "" {
		return nil, errorf(400, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	return nil, errorf(400, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}

func (s *state) fleetCandidate(lt *LaunchTemplate, version string, ov map[string]string, capacityType string) *fleetCandidate {
	cand := &fleetCandidate{lt: lt, ltVersion: version, overrides: ov, priority: math.Inf(1)}
	cand.instanceType = ov["InstanceType"]
	if cand.instanceType == "" {
		cand.instanceType = lt.InstanceType()
	}
	cand.reservation = lt.Data[capacityReservationTargetKey]
	cand.imageID = ov["ImageId"]
	if cand.imageID == "" {
		cand.imageID = lt.ImageID()
	}
	if p, err := strconv.ParseFloat(ov["Priority"], 64); err == nil {
		cand.priority = p
	}
	cand.tenancy = ov["Placement.Tenancy"]
	if cand.tenancy == "" {
		cand.tenancy = lt.Tenancy()
	}
	if cand.tenancy == "" {
		cand.tenancy = "default"
	}
	cand.placement = placementRef{name: lt.Data["Placement.GroupName"], id: lt.Data["Placement.GroupId"], partition: lt.Data["Placement.PartitionNumber"]}
	if n := ov["Placement.GroupName"]; n != "" {
		cand.placement = placementRef{name: n, partition: cand.placement.partition}
	}
	switch {
	case ov["SubnetId"] != "":
		cand.subnet = s.subnets[ov["SubnetId"]]
		if cand.subnet == nil {
			cand.subnet = &Subnet{ID: ov["SubnetId"], AvailableIPs: -1} // reported as not found
		}
	default:
		zone := ov["AvailabilityZone"]
		for _, id := range sortedKeys(s.subnets) {
			sn := s.subnets[id]
			if (zone == "" || sn.Zone == zone) && (cand.subnet == nil || sn.AvailableIPs > cand.subnet.AvailableIPs) {
				cand.subnet = sn
			}
		}
		if cand.subnet == nil {
			cand.subnet = &Subnet{Zone: zone, AvailableIPs: -1}
		}
	}
	cand.zone = cand.subnet.Zone
	cand.price = math.Inf(1)
	if capacityType == "spot" {
		if p, ok := s.spotPrices[offeringKey{cand.instanceType, cand.zone}]; ok {
			cand.price = p
		}
	} else if it := s.instanceTypeIndex[cand.instanceType]; it != nil && it.onDemandUSD > 0 {
		cand.price = it.onDemandUSD
	}
	return cand
}

// sortCandidates orders pools as the allocation strategy would: by priority for the
// prioritized strategies, else by price; ties by type, then zone.
func sortCandidates(cands []*fleetCandidate, strategy string) {
	prioritized := strategy == "prioritized" || strategy == "capacity-optimized-prioritized"
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if prioritized && a.priority != b.priority {
			return a.priority < b.priority
		}
		if a.price != b.price {
			return a.price < b.price
		}
		if a.instanceType != b.instanceType {
			return a.instanceType < b.instanceType
		}
		return a.zone < b.zone
	})
}

// unfulfillable returns the error code EC2 reports for a pool it cannot launch in.
func (s *state) unfulfillable(c *fleetCandidate, capacityType string) (string, string) {
	it := s.instanceTypeIndex[c.instanceType]
	switch {
	case c.subnet.AvailableIPs < 0 && c.subnet.ID != "":
		return "InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", c.subnet.ID)
	case c.subnet.AvailableIPs < 0:
		return "InvalidParameterValue", fmt.Sprintf("No subnet found in availability zone '%s'", c.zone)
	case it == nil:
		return "InvalidParameterValue", fmt.Sprintf("The instance type '%s' does not exist", c.instanceType)
	case !s.offered[c.instanceType][c.zone]:
		return "Unsupported", fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", c.instanceType, c.zone, strings.Join(s.offeredZones(c.instanceType), ", "))
	case s.insufficient[capacityKey{capacityType, c.instanceType, c.zone}]:
		return "InsufficientInstanceCapacity", fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.", c.instanceType, c.zone)
	case capacityType == "spot" && math.IsInf(c.price, 1):
		return "Unsupported", fmt.Sprintf("The instance type %s is not available as spot capacity in %s.", c.instanceType, c.zone)
	case c.tenancy == "host":
		// The emulator has no Dedicated Hosts to place the instance on.
		return "InsufficientHostCapacity", fmt.Sprintf("There is no Dedicated Host with available capacity for instance type %s in %s; allocate a host or launch with tenancy default or dedicated.", c.instanceType, c.zone)
	case s.tenancyUnsupported[tenancyKey{c.instanceType, c.tenancy}]:
		return "Unsupported", "The requested configuration is currently not supported. Please check the documentation for supported configurations."
	case c.subnet.AvailableIPs == 0:
		return "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
	}
	pg, partition, code, msg := s.placementUnfulfillable(c.placement, c.zone)
	if code != "" {
		return code, msg
	}
	c.group, c.partition = pg, partition
	if c.reservation != "" {
		cr := s.capacityReservations[c.reservation]
		switch {
		case cr == nil:
			return "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", c.reservation)
		case cr.InstanceType != c.instanceType || cr.Zone != c.zone || cr.State != "active":
			return "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' (%s, %s, %s) cannot take a %s instance in %s.", cr.ID, cr.InstanceType, cr.Zone, cr.State, c.instanceType, c.zone)
		case cr.AvailableInstanceCount <= 0:
			if s.reservationRefusals == nil {
				s.reservationRefusals = map[string]int{}
			}
			s.reservationRefusals[cr.ID]++
			return "ReservationCapacityExceeded", fmt.Sprintf("Insufficient capacity in the Capacity Reservation %s.", cr.ID)
		}
	}
	if c.imageID == "" {
		return "MissingParameter", "The request must contain the parameter ImageId"
	}
	img := s.images[c.imageID]
	if img == nil {
		return "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", c.imageID)
	}
	if img.Architecture != it.arch {
		return "InvalidParameterValue", fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again.", it.arch, img.Architecture)
	}
	if code, msg := interfacesUnfulfillable(c.lt, it); code != "" {
		return code, msg
	}
	for _, sg := range c.lt.groupIDs() {
		if s.securityGroups[sg] == nil {
			return "InvalidGroup.NotFound", fmt.Sprintf("The security group '%s' does not exist", sg)
		}
	}
	if name, arn := c.lt.InstanceProfile(); name != "" || arn != "" {
		if s.profileByNameOrARN(name, arn) == nil {
			param, v := "iamInstanceProfile.name", name
			if name == "" {
				param, v = "iamInstanceProfile.arn", arn
			}
			return "InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter %s is invalid. Invalid IAM Instance Profile name", v, param)
		}
	}
	return "", ""
}

func (s *state) offeredZones(instanceType string) []string {
	var out []string
	for _, z := range s.zones {
		if s.offered[instanceType][z.name] {
			out = append(out, z.name)
		}
	}
	return out
}

func (s *state) profileByNameOrARN(name, arn string) *InstanceProfile {
	for _, p := range s.instanceProfiles {
		if (name != "" && p.Name == name) || (arn != "" && p.ARN == arn) {
			return p
		}
	}
	return nil
}

// launch creates one instance in the candidate's pool and takes an address of its subnet.
func (s *state) launch(c *fleetCandidate, capacityType, fleetID, reservationID string, fleetTags map[string]string) *Instance {
	seq := s.nextSeq()
	it := s.instanceTypeIndex[c.instanceType]
	ip := s.nextAddress(c.subnet)
	tags := cloneTags(c.lt.TagsFor("instance"))
	for k, v := range fleetTags {
		tags[k] = v
	}
	tags["aws:ec2:fleet-id"] = fleetID
	tags["aws:ec2launchtemplate:id"] = c.lt.ID
	tags["aws:ec2launchtemplate:version"] = strconv.FormatInt(c.lt.Version, 10)
	in := &Instance{
		ID: hexID("i", "instance", seq), InstanceType: c.instanceType, Architecture: it.arch,
		Zone: c.zone, ZoneID: c.subnet.ZoneID, SubnetID: c.subnet.ID, VPCID: c.subnet.VPCID, ImageID: c.imageID,
		CapacityType: capacityType, State: "pending", LaunchTime: s.now().UTC().Truncate(time.Second),
		PrivateIP: ip, PrivateDNSName: "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + s.opts.Region + ".compute.internal",
		SecurityGroupIDs: c.lt.groupIDs(), LaunchTemplateID: c.lt.ID, LaunchTemplateName: c.lt.Name,
		UserData: c.lt.UserData(), Tags: tags, ReservationID: reservationID, FleetID: fleetID, MetadataOptions: map[string]string{},
		Tenancy: c.tenancy,
	}
	for _, ni := range c.lt.NetworkInterfaces() {
		ni.SubnetID = c.subnet.ID
		if len(ni.SecurityGroupIDs) == 0 {
			ni.SecurityGroupIDs = c.lt.SecurityGroupIDs()
		}
		if ni.InterfaceType == "" {
			ni.InterfaceType = "interface"
		}
		in.NetworkInterfaces = append(in.NetworkInterfaces, ni)
	}
	if c.group != nil {
		in.PlacementGroupName, in.PlacementGroupID, in.PartitionNumber = c.group.Name, c.group.ID, c.partition
	}
	if name, arn := c.lt.InstanceProfile(); name != "" || arn != "" {
		if p := s.profileByNameOrARN(name, arn); p != nil {
			in.InstanceProfileARN = p.ARN
		}
	}
	for k, v := range c.lt.Data {
		if rest, ok := strings.CutPrefix(k, "MetadataOptions."); ok {
			in.MetadataOptions[rest] = v
		}
	}
	if capacityType == "spot" {
		in.SpotRequestID = "sir-" + hashHex(8, "spot-request", in.ID)
	}
	c.subnet.AvailableIPs--
	s.instances[in.ID] = in
	s.instanceOrder = append(s.instanceOrder, in.ID)
	now := s.now()
	s.life().since[in.ID] = now
	s.stateChangeEvent(in, now)
	return in
}

// nextAddress hands out the subnet's addresses in order, after AWS's 4 reserved ones.
func (s *state) nextAddress(sn *Subnet) string {
	s.addressSeq[sn.ID]++
	prefix, err := netip.ParsePrefix(sn.CIDR)
	if err != nil {
		return "10.255.255.254"
	}
	a := prefix.Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n += uint32(3 + s.addressSeq[sn.ID])
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

func uuidLike(parts ...string) string {
	h := hashHex(32, parts...)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

func writeLaunchTemplateAndOverrides(b *xb, c *fleetCandidate) {
	b.open("launchTemplateAndOverrides")
	b.open("launchTemplateSpecification")
	b.leafAlways("launchTemplateId", c.lt.ID)
	b.leafAlways("launchTemplateName", c.lt.Name)
	b.leaf("version", c.ltVersion)
	b.close("launchTemplateSpecification")
	b.open("overrides")
	b.leaf("instanceType", c.instanceType)
	b.leaf("subnetId", c.subnet.ID)
	b.leaf("availabilityZone", c.zone)
	b.leaf("imageId", c.overrides["ImageId"])
	b.leaf("priority", c.overrides["Priority"])
	b.leaf("maxPrice", c.overrides["MaxPrice"])
	b.close("overrides")
	b.close("launchTemplateAndOverrides")
}

// --- DescribeInstances, TerminateInstances, CreateTags ---

var instanceFilters = nameSet("instance-id", "instance-state-name", "instance-state-code", "instance-type", "availability-zone",
	"subnet-id", "vpc-id", "image-id", "private-ip-address", "private-dns-name", "instance-lifecycle", "reservation-id",
	"iam-instance-profile.arn", "architecture", "tenancy", "placement-group-name", "placement-partition-number")

func instanceFields(in *Instance) filterFields {
	lifecycle := ""
	if in.CapacityType == "spot" {
		lifecycle = "spot"
	}
	return fieldMap(map[string][]string{
		"instance-id": {in.ID}, "instance-state-name": {in.State}, "instance-state-code": {strconv.Itoa(stateCodes[in.State])},
		"instance-type": {in.InstanceType}, "availability-zone": {in.Zone}, "subnet-id": {in.SubnetID}, "vpc-id": {in.VPCID},
		"image-id": {in.ImageID}, "private-ip-address": {in.PrivateIP}, "private-dns-name": {in.PrivateDNSName},
		"instance-lifecycle": {lifecycle}, "reservation-id": {in.ReservationID}, "iam-instance-profile.arn": {in.InstanceProfileARN},
		"architecture": {in.Architecture}, "tenancy": {tenancyOf(in)},
		"placement-group-name": {in.PlacementGroupName}, "placement-partition-number": {partitionOf(in)},
	})
}

func partitionOf(in *Instance) string {
	if in.PartitionNumber == 0 {
		return ""
	}
	return strconv.Itoa(in.PartitionNumber)
}

func tenancyOf(in *Instance) string {
	if in.Tenancy == "" {
		return "default"
	}
	return in.Tenancy
}

func checkInstanceIDs(s *state, ids []string) *apiError {
	for _, id := range ids {
		if !strings.HasPrefix(id, "i-") {
			return errorf(400, "InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
	}
	var missing []string
	for _, id := range ids {
		if s.instances[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) == 1 {
		return errorf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	} else if len(missing) > 1 {
		return errorf(400, "InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	return nil
}

// eachRequestedInstance is the selection of the Describe calls over
// instances: it checks that every id of the request exists, brings the
// instances' lifecycles up to now, and calls f for each instance the ids name
// (every one without ids), in launch order.
func (s *state) eachRequestedInstance(ids []string, f func(in *Instance)) *apiError {
	if apiErr := checkInstanceIDs(s, ids); apiErr != nil {
		return apiErr
	}
	s.observeInstances()
	want := nameSet(ids...)
	for _, id := range s.instanceOrder {
		if len(want) == 0 || want[id] {
			f(s.instances[id])
		}
	}
	return nil
}

func ec2DescribeInstances(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, instanceFilters); err != nil {
		return nil, err
	}
	ids := c.list("InstanceId")
	if err := idsWithMaxResults(c, ids, "instanceIds"); err != nil {
		return nil, err
	}
	var matched []Instance
	var apiErr *apiError
	c.e.locked(func(s *state) {
		apiErr = s.eachRequestedInstance(ids, func(in *Instance) {
			if matchFilters(filters, instanceFields(in), in.Tags) {
				matched = append(matched, in.clone())
			}
		})
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 5, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	// One reservation per launch (fleet), in launch order.
	var b xb
	b.open("reservationSet")
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].ReservationID == items[i].ReservationID {
			j++
		}
		b.open("item")
		b.leafAlways("reservationId", items[i].ReservationID)
		b.leafAlways("ownerId", c.e.opts.AccountID)
		b.open("groupSet")
		b.close("groupSet")
		b.open("instancesSet")
		for k := i; k < j; k++ {
			writeInstance(&b, c.e, &items[k])
		}
		b.close("instancesSet")
		b.close("item")
		i = j
	}
	b.close("reservationSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

func writeState(b *xb, name, st string) {
	b.open(name)
	b.integer("code", int64(stateCodes[st]))
	b.leafAlways("name", st)
	b.close(name)
}

func writeInstance(b *xb, e *Emulator, in *Instance) {
	b.open("item")
	b.leafAlways("instanceId", in.ID)
	b.leafAlways("imageId", in.ImageID)
	writeState(b, "instanceState", in.State)
	b.leafAlways("privateDnsName", in.PrivateDNSName)
	b.leafAlways("dnsName", "")
	b.integer("amiLaunchIndex", 0)
	b.leafAlways("instanceType", in.InstanceType)
	b.timestamp("launchTime", in.LaunchTime)
	b.open("placement")
	b.leafAlways("availabilityZone", in.Zone)
	b.leaf("availabilityZoneId", in.ZoneID)
	b.leafAlways("tenancy", tenancyOf(in))
	b.leaf("groupName", in.PlacementGroupName)
	b.leaf("groupId", in.PlacementGroupID)
	if in.PartitionNumber > 0 {
		b.integer("partitionNumber", int64(in.PartitionNumber))
	}
	b.close("placement")
	b.open("monitoring")
	b.leafAlways("state", "disabled")
	b.close("monitoring")
	b.leafAlways("subnetId", in.SubnetID)
	b.leafAlways("vpcId", in.VPCID)
	b.leafAlways("privateIpAddress", in.PrivateIP)
	b.itemList("groupSet", "groupId", in.SecurityGroupIDs)
	if len(in.NetworkInterfaces) > 0 {
		b.open("networkInterfaceSet")
		for i, ni := range in.NetworkInterfaces {
			b.open("item")
			b.leafAlways("networkInterfaceId", hexID("eni", "instance-eni", in.ID, strconv.Itoa(i)))
			b.leafAlways("subnetId", ni.SubnetID)
			b.leafAlways("vpcId", in.VPCID)
			b.leafAlways("interfaceType", ni.InterfaceType)
			b.open("attachment")
			b.integer("deviceIndex", int64(ni.DeviceIndex))
			b.integer("networkCardIndex", int64(ni.NetworkCardIndex))
			b.leafAlways("status", "attached")
			b.close("attachment")
			b.itemList("groupSet", "groupId", ni.SecurityGroupIDs)
			addresses, prefixes := ipv6Addresses(in.ID, i, ni)
			if len(addresses) > 0 {
				b.open("ipv6AddressesSet")
				for j, a := range addresses {
					b.open("item")
					b.leafAlways("ipv6Address", a)
					b.boolean("isPrimaryIpv6", j == 0 && ni.PrimaryIPv6)
					b.close("item")
				}
				b.close("ipv6AddressesSet")
			}
			if len(prefixes) > 0 {
				b.itemList("ipv6PrefixSet", "ipv6Prefix", prefixes)
			}
			b.close("item")
		}
		b.close("networkInterfaceSet")
	}
	b.leafAlways("architecture", in.Architecture)
	b.leaf("capacityReservationId", in.CapacityReservationID)
	b.leafAlways("rootDeviceType", "ebs")
	b.leafAlways("rootDeviceName", "/dev/xvda")
	if in.CapacityType == "spot" {
		b.leafAlways("instanceLifecycle", "spot")
		b.leafAlways("spotInstanceRequestId", in.SpotRequestID)
	}
	b.leafAlways("virtualizationType", "hvm")
	b.leafAlways("hypervisor", "xen")
	if in.InstanceProfileARN != "" {
		b.open("iamInstanceProfile")
		b.leafAlways("arn", in.InstanceProfileARN)
		b.leafAlways("id", upperID("AIPA", "profile-id", in.InstanceProfileARN))
		b.close("iamInstanceProfile")
	}
	if len(in.MetadataOptions) > 0 {
		b.open("metadataOptions")
		b.leafAlways("state", "applied")
		for _, k := range []string{"HttpTokens", "HttpPutResponseHopLimit", "HttpEndpoint", "HttpProtocolIpv6", "InstanceMetadataTags"} {
			if v := in.MetadataOptions[k]; v != "" {
				b.leafAlways(strings.ToLower(k[:1])+k[1:], v)
			}
		}
		b.close("metadataOptions")
	}
	b.tagSet("tagSet", "item", "key", "value", in.Tags)
	b.close("item")
}

// SetRebootHangs makes RebootInstances of the instance be accepted from now on
// without the instance ever coming back (hang) or, with hang false, reboot it
// as usual.
func (e *Emulator) SetRebootHangs(id string, hang bool) error {
	var err error
	e.locked(func(s *state) {
		in := s.instances[id]
		if in == nil {
			err = fmt.Errorf("instance %s does not exist", id)
			return
		}
		in.RebootHangs = hang
	})
	return err
}

// ec2RebootInstances reboots running instances: each boots again at once (its
// Node, if it registered, reports a new boot ID on the next step) unless its
// reboot hangs. An instance that is not running cannot be rebooted.
func ec2RebootInstances(c *call) (any, error) {
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	ids := c.list("InstanceId")
	if len(ids) == 0 {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	var apiErr *apiError
	c.e.locked(func(s *state) {
		if apiErr = checkInstanceIDs(s, ids); apiErr != nil {
			return
		}
		for _, id := range ids {
			if st := s.instances[id].State; st != "running" {
				apiErr = errorf(400, "IncorrectState", "The instance '%s' is not in a state from which it can be rebooted (%s).", id, st)
				return
			}
		}
		l := s.life()
		for _, id := range ids {
			in := s.instances[id]
			if in.RebootHangs {
				continue
			}
			in.Boots = max(in.Boots, 1) + 1
			l.nodeOps = append(l.nodeOps, nodeOp{instanceID: in.ID, nodeName: in.PrivateDNSName, bootID: in.BootID()})
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.leafAlways("return", "true")
	return b.body(), nil
}

func ec2TerminateInstances(c *call) (any, error) {
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	ids := c.list("InstanceId")
	if len(ids) == 0 {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	var b xb
	var apiErr *apiError
	c.e.locked(func(s *state) {
		if apiErr = checkInstanceIDs(s, ids); apiErr != nil {
			return
		}
		b.open("instancesSet")
		for _, id := range ids {
			in := s.instances[id]
			prev := in.State
			s.releaseAddress(in)
			if in.State != "terminated" {
				s.setState(in, "shutting-down", s.now())
			}
			b.open("item")
			b.leafAlways("instanceId", id)
			writeState(&b, "currentState", in.State)
			writeState(&b, "previousState", prev)
			b.close("item")
		}
		b.close("instancesSet")
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return b.body(), nil
}

// ec2CreateTags tags instances, subnets, security groups, images and launch templates.
func ec2CreateTags(c *call) (any, error) {
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	ids := c.list("ResourceId")
	tags := map[string]string{}
	for i := 1; i <= c.count("Tag"); i++ {
		p := "Tag." + strconv.Itoa(i)
		k := c.str(p + ".Key")
		if k == "" || len(k) > 128 {
			return nil, errorf(400, "InvalidParameterValue", "Tag key must be between 1 and 128 characters")
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, errorf(400, "InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
		tags[k] = c.str(p + ".Value")
	}
	if len(ids) == 0 {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter ResourceId")
	}
	var apiErr *apiError
	c.e.locked(func(s *state) {
		var targets []map[string]string
		for _, id := range ids {
			var t *map[string]string
			switch {
			case strings.HasPrefix(id, "i-") && s.instances[id] != nil:
				t = &s.instances[id].Tags
			case strings.HasPrefix(id, "subnet-") && s.subnets[id] != nil:
				t = &s.subnets[id].Tags
			case strings.HasPrefix(id, "sg-") && s.securityGroups[id] != nil:
				t = &s.securityGroups[id].Tags
			case strings.HasPrefix(id, "ami-") && s.images[id] != nil:
				t = &s.images[id].Tags
			case strings.HasPrefix(id, "lt-") && s.launchTemplates[id] != nil:
				t = &s.launchTemplates[id].Tags
			case strings.HasPrefix(id, "i-"):
				apiErr = errorf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
				return
			default:
				apiErr = errorf(400, "InvalidID", "The ID '%s' is not valid", id)
				return
			}
			if *t == nil {
				*t = map[string]string{}
			}
			targets = append(targets, *t)
		}
		for _, t := range targets {
			added := 0
			for k := range tags {
				if _, ok := t[k]; !ok {
					added++
				}
			}
			if len(t)+added > 50 {
				apiErr = errorf(400, "TagLimitExceeded", "The maximum number of tags per resource (50) was exceeded")
				return
			}
		}
		for _, t := range targets {
			for k, v := range tags {
				t[k] = v
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return xmlBody("<return>true</return>"), nil
}
