package awsemulator

import (
	"fmt"
	"strconv"
	"strings"
)

// PlacementGroup is an EC2 placement group. None are seeded: tests create
// them with CreatePlacementGroup or AddPlacementGroup.
//
// Launches into a group (a launch template's Placement.GroupName or
// Placement.GroupId, and Placement.PartitionNumber) are refused as EC2
// refuses them, each as a CreateFleet error of the pool:
//   - a group that does not exist or is not available: InvalidPlacementGroup.Unknown
//     (by name) or InvalidPlacementGroupId.NotFound (by id);
//   - a partition number on a group that is not a partition group:
//     InvalidParameterCombination; one outside 1..PartitionCount: InvalidParameterValue;
//   - a cluster group whose live instances are in another zone than the pool's:
//     InsufficientInstanceCapacity (EC2 keeps a cluster group in one zone);
//   - a spread group with seven live instances in the pool's zone:
//     InsufficientInstanceCapacity with EC2's spread limit message.
//
// A partition group launch without a partition number lands in the
// partition with the fewest live instances (the lowest on a tie), and
// DescribeInstances reports it as placement.partitionNumber.
type PlacementGroup struct {
	Name           string
	ID             string // "" = derived from the call sequence (pg-<17 hex>)
	Strategy       string // cluster | spread | partition
	PartitionCount int    // partition groups: 1..7; 0 = 2
	SpreadLevel    string // spread groups: host | rack; "" = rack
	State          string // pending | available | deleting | deleted; "" = available
	Tags           map[string]string
}

// AddPlacementGroup adds (or replaces, by name) a placement group and
// returns it with defaults filled in.
func (e *Emulator) AddPlacementGroup(pg PlacementGroup) PlacementGroup {
	var out PlacementGroup
	e.locked(func(s *state) { out = s.addPlacementGroup(pg).clone() })
	return out
}

// SetPlacementGroupState sets a group's state (e.g. "deleting"); false when
// no group has that name.
func (e *Emulator) SetPlacementGroupState(name, st string) bool {
	found := false
	e.locked(func(s *state) {
		if pg := s.placementGroups[name]; pg != nil {
			pg.State = st
			found = true
		}
	})
	return found
}

// PlacementGroups are the emulator's placement groups.
func (e *Emulator) PlacementGroups() []PlacementGroup {
	var out []PlacementGroup
	e.locked(func(s *state) {
		for _, name := range sortedKeys(s.placementGroups) {
			out = append(out, s.placementGroups[name].clone())
		}
	})
	return out
}

func (pg *PlacementGroup) clone() PlacementGroup {
	cp := *pg
	cp.Tags = cloneTags(pg.Tags)
	return cp
}

func (s *state) addPlacementGroup(pg PlacementGroup) *PlacementGroup {
	if pg.ID == "" {
		pg.ID = hexID("pg", "placement-group", pg.Name, s.nextSeq())
	}
	if pg.Strategy == "partition" && pg.PartitionCount == 0 {
		pg.PartitionCount = 2
	}
	if pg.Strategy == "spread" && pg.SpreadLevel == "" {
		pg.SpreadLevel = "rack"
	}
	if pg.State == "" {
		pg.State = "available"
	}
	pg.Tags = cloneTags(pg.Tags)
	if s.placementGroups == nil {
		s.placementGroups = map[string]*PlacementGroup{}
	}
	s.placementGroups[pg.Name] = &pg
	return &pg
}

func (s *state) placementGroupByID(id string) *PlacementGroup {
	for _, pg := range s.placementGroups {
		if pg.ID == id {
			return pg
		}
	}
	return nil
}

func placementGroupARN(s *state, pg *PlacementGroup) string {
	return s.ec2ARN("placement-group", pg.Name)
}

var placementGroupFilters = nameSet("group-name", "group-arn", "spread-level", "state", "strategy")

func ec2CreatePlacementGroup(c *call) (any, error) {
	name := c.str("GroupName")
	strategy := c.str("Strategy")
	switch strategy {
	case "cluster", "spread", "partition":
	case "":
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter strategy")
	default:
		return nil, errorf(400, "InvalidParameterValue", "Value (%s) for parameter strategy is invalid. Valid values are: cluster, spread, partition.", strategy)
	}
	count, hasCount, apiErr := c.integer("PartitionCount")
	if apiErr != nil {
		return nil, apiErr
	}
	if hasCount && strategy != "partition" {
		return nil, errorf(400, "InvalidParameterCombination", "The parameter partitionCount is only valid for the partition strategy.")
	}
	if hasCount && (count < 1 || count > 7) {
		return nil, errorf(400, "InvalidParameterValue", "Value (%d) for parameter partitionCount is invalid. Partition count must be between 1 and 7.", count)
	}
	level := c.str("SpreadLevel")
	if level != "" && strategy != "spread" {
		return nil, errorf(400, "InvalidParameterCombination", "The parameter spreadLevel is only valid for the spread strategy.")
	}
	if level != "" && level != "host" && level != "rack" {
		return nil, errorf(400, "InvalidParameterValue", "Value (%s) for parameter spreadLevel is invalid. Valid values are: host, rack.", level)
	}
	if name == "" {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter groupName")
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	var b xb
	c.e.locked(func(s *state) {
		if s.placementGroups[name] != nil && s.placementGroups[name].State != "deleted" {
			apiErr = errorf(400, "InvalidPlacementGroup.Duplicate", "The Placement Group '%s' already exists.", name)
			return
		}
		pg := s.addPlacementGroup(PlacementGroup{Name: name, Strategy: strategy, PartitionCount: count, SpreadLevel: level,
			Tags: tagSpecs(formMap(c), "TagSpecification")["placement-group"]})
		b.boolean("return", true)
		writePlacementGroup(&b, s, "placementGroup", pg)
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return b.body(), nil
}

func ec2DeletePlacementGroup(c *call) (any, error) {
	name := c.str("GroupName")
	if name == "" {
		return nil, errorf(400, "MissingParameter", "The request must contain the parameter groupName")
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	var apiErr *apiError
	c.e.locked(func(s *state) {
		pg := s.placementGroups[name]
		if pg == nil || pg.State == "deleted" {
			apiErr = errorf(400, "InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
			return
		}
		if len(s.livePlacementGroupInstances(pg)) > 0 {
			apiErr = errorf(400, "InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", name)
			return
		}
		delete(s.placementGroups, name)
	})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.boolean("return", true)
	return b.body(), nil
}

func ec2DescribePlacementGroups(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, placementGroupFilters); err != nil {
		return nil, err
	}
	names := c.list("GroupName")
	ids := c.list("GroupId")
	for _, id := range ids {
		if !strings.HasPrefix(id, "pg-") {
			return nil, errorf(400, "InvalidPlacementGroupId.Malformed", "Invalid id: \"%s\" (expecting \"pg-...\")", id)
		}
	}
	var b xb
	var apiErr *apiError
	c.e.locked(func(s *state) {
		for _, n := range names {
			if pg := s.placementGroups[n]; pg == nil || pg.State == "deleted" {
				apiErr = errorf(400, "InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", n)
				return
			}
		}
		for _, id := range ids {
			if pg := s.placementGroupByID(id); pg == nil || pg.State == "deleted" {
				apiErr = errorf(400, "InvalidPlacementGroupId.NotFound", "The Placement Group ID '%s' does not exist.", id)
				return
			}
		}
		wantNames, wantIDs := nameSet(names...), nameSet(ids...)
		b.open("placementGroupSet")
		for _, name := range sortedKeys(s.placementGroups) {
			pg := s.placementGroups[name]
			if (len(wantNames) > 0 && !wantNames[pg.Name]) || (len(wantIDs) > 0 && !wantIDs[pg.ID]) {
				continue
			}
			fields := fieldMap(map[string][]string{
				"group-name": {pg.Name}, "group-arn": {placementGroupARN(s, pg)}, "spread-level": {pg.SpreadLevel},
				"state": {pg.State}, "strategy": {pg.Strategy},
			})
			if matchFilters(filters, fields, pg.Tags) {
				writePlacementGroup(&b, s, "item", pg)
			}
		}
		b.close("placementGroupSet")
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return b.body(), nil
}

func writePlacementGroup(b *xb, s *state, elem string, pg *PlacementGroup) {
	b.open(elem)
	b.leafAlways("groupName", pg.Name)
	b.leafAlways("groupId", pg.ID)
	b.leafAlways("state", pg.State)
	b.leafAlways("strategy", pg.Strategy)
	if pg.Strategy == "partition" {
		b.integer("partitionCount", int64(pg.PartitionCount))
	}
	b.leaf("spreadLevel", pg.SpreadLevel)
	b.leafAlways("groupArn", placementGroupARN(s, pg))
	b.tagSet("tagSet", "item", "key", "value", pg.Tags)
	b.close(elem)
}

// livePlacementGroupInstances are the group's instances that are not
// terminated.
func (s *state) livePlacementGroupInstances(pg *PlacementGroup) []*Instance {
	var out []*Instance
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		if in != nil && in.PlacementGroupID == pg.ID && in.State != "terminated" && in.State != "shutting-down" {
			out = append(out, in)
		}
	}
	return out
}

// placementRef is the placement group a launch pool asks for.
type placementRef struct {
	name, id  string
	partition string // as sent; "" = none
}

func (r placementRef) none() bool { return r.name == "" && r.id == "" && r.partition == "" }

// placementUnfulfillable is the error EC2 reports for a pool whose placement
// it refuses ("" when it accepts it), and the group and partition it would
// land in.
func (s *state) placementUnfulfillable(r placementRef, zone string) (pg *PlacementGroup, partition int, code, msg string) {
	if r.none() {
		return nil, 0, "", ""
	}
	switch {
	case r.id != "":
		pg = s.placementGroupByID(r.id)
		if pg == nil || pg.State != "available" {
			return nil, 0, "InvalidPlacementGroupId.NotFound", fmt.Sprintf("The Placement Group ID '%s' does not exist.", r.id)
		}
	case r.name != "":
		pg = s.placementGroups[r.name]
		if pg == nil || pg.State != "available" {
			return nil, 0, "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", r.name)
		}
	default:
		return nil, 0, "InvalidParameterCombination", "A partition number can only be specified together with a placement group."
	}
	live := s.livePlacementGroupInstances(pg)
	if r.partition != "" {
		if pg.Strategy != "partition" {
			return nil, 0, "InvalidParameterCombination", fmt.Sprintf("A partition number can only be specified for a placement group of the partition strategy; '%s' is a %s placement group.", pg.Name, pg.Strategy)
		}
		n, err := strconv.Atoi(r.partition)
		if err != nil || n < 1 || n > pg.PartitionCount {
			return nil, 0, "InvalidParameterValue", fmt.Sprintf("The partition number '%s' is not valid for placement group '%s', which has %d partitions.", r.partition, pg.Name, pg.PartitionCount)
		}
		partition = n
	}
	switch pg.Strategy {
	case "cluster":
		for _, in := range live {
			if in.Zone != zone {
				return nil, 0, "InsufficientInstanceCapacity", fmt.Sprintf("We currently do not have sufficient capacity in the Availability Zone you requested (%s): the cluster placement group '%s' has instances in %s, and a cluster placement group can't span Availability Zones.", zone, pg.Name, in.Zone)
			}
		}
	case "spread":
		n := 0
		for _, in := range live {
			if in.Zone == zone {
				n++
			}
		}
		if n >= 7 {
			return nil, 0, "InsufficientInstanceCapacity", "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone."
		}
	case "partition":
		if partition == 0 {
			counts := make([]int, pg.PartitionCount+1)
			for _, in := range live {
				if in.PartitionNumber >= 1 && in.PartitionNumber <= pg.PartitionCount {
					counts[in.PartitionNumber]++
				}
			}
			partition = 1
			for p := 2; p <= pg.PartitionCount; p++ {
				if counts[p] < counts[partition] {
					partition = p
				}
			}
		}
	}
	return pg, partition, "", ""
}
