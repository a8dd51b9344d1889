package awsemulator

import (
	"strconv"
)

var azFilters = nameSet("zone-name", "zone-id", "region-name", "state", "zone-type", "group-name", "opt-in-status")

func ec2DescribeAvailabilityZones(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, azFilters); err != nil {
		return nil, err
	}
	names, ids := nameSet(c.list("ZoneName")...), nameSet(c.list("ZoneId")...)
	var b xb
	b.open("availabilityZoneInfo")
	c.e.locked(func(s *state) {
		for _, z := range s.zones {
			if (len(names) > 0 || len(ids) > 0) && !names[z.name] && !ids[z.id] {
				continue
			}
			fields := fieldMap(map[string][]string{
				"zone-name": {z.name}, "zone-id": {z.id}, "region-name": {s.opts.Region}, "state": {"available"},
				"zone-type": {"availability-zone"}, "group-name": {s.opts.Region}, "opt-in-status": {"opt-in-not-required"},
			})
			if !matchFilters(filters, fields, nil) {
				continue
			}
			b.open("item")
			b.leafAlways("zoneName", z.name)
			b.leafAlways("zoneId", z.id)
			b.leafAlways("zoneState", "available")
			b.leafAlways("regionName", s.opts.Region)
			b.leafAlways("groupName", s.opts.Region)
			b.leafAlways("networkBorderGroup", s.opts.Region)
			b.leafAlways("zoneType", "availability-zone")
			b.leafAlways("optInStatus", "opt-in-not-required")
			b.open("messageSet")
			b.close("messageSet")
			b.close("item")
		}
	})
	b.close("availabilityZoneInfo")
	return b.body(), nil
}

var subnetFilters = nameSet("subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "state", "cidr-block",
	"cidrBlock", "cidr", "default-for-az", "defaultForAz", "map-public-ip-on-launch", "owner-id", "subnet-arn",
	"available-ip-address-count")

func subnetARN(s *state, id string) string {
	return "arn:aws:ec2:" + s.opts.Region + ":" + s.opts.AccountID + ":subnet/" + id
}

func ec2DescribeSubnets(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, subnetFilters); err != nil {
		return nil, err
	}
	ids := c.list("SubnetId")
	if err := idsWithMaxResults(c, ids, "subnetIds"); err != nil {
		return nil, err
	}
	var matched []Subnet
	var apiErr *apiError
	c.e.locked(func(s *state) {
		for _, id := range ids {
			if s.subnets[id] == nil {
				apiErr = errorf(400, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
				return
			}
		}
		want := nameSet(ids...)
		for _, id := range sortedKeys(s.subnets) {
			sn := s.subnets[id]
			if len(want) > 0 && !want[id] {
				continue
			}
			fields := fieldMap(map[string][]string{
				"subnet-id": {sn.ID}, "vpc-id": {sn.VPCID}, "availability-zone": {sn.Zone}, "availability-zone-id": {sn.ZoneID},
				"state": {"available"}, "cidr-block": {sn.CIDR}, "cidrBlock": {sn.CIDR}, "cidr": {sn.CIDR},
				"default-for-az": {"false"}, "defaultForAz": {"false"}, "map-public-ip-on-launch": {strconv.FormatBool(sn.MapPublicIPOnLaunch)},
				"owner-id": {s.opts.AccountID}, "subnet-arn": {subnetARN(s, sn.ID)}, "available-ip-address-count": {strconv.Itoa(sn.AvailableIPs)},
			})
			if matchFilters(filters, fields, sn.Tags) {
				cp := *sn
				cp.Tags = cloneTags(sn.Tags)
				matched = append(matched, cp)
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 5, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("subnetSet")
	for _, sn := range items {
		b.open("item")
		b.leafAlways("subnetId", sn.ID)
		b.leafAlways("subnetArn", "arn:aws:ec2:"+c.e.opts.Region+":"+c.e.opts.AccountID+":subnet/"+sn.ID)
		b.leafAlways("state", "available")
		b.leafAlways("vpcId", sn.VPCID)
		b.leafAlways("ownerId", c.e.opts.AccountID)
		b.leafAlways("cidrBlock", sn.CIDR)
		b.integer("availableIpAddressCount", int64(sn.AvailableIPs))
		b.leafAlways("availabilityZone", sn.Zone)
		b.leafAlways("availabilityZoneId", sn.ZoneID)
		b.boolean("defaultForAz", false)
		b.boolean("mapPublicIpOnLaunch", sn.MapPublicIPOnLaunch)
		b.boolean("assignIpv6AddressOnCreation", false)
		b.boolean("ipv6Native", false)
		b.tagSet("tagSet", "item", "key", "value", sn.Tags)
		b.close("item")
	}
	b.close("subnetSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

var securityGroupFilters = nameSet("group-id", "group-name", "vpc-id", "description", "owner-id")

func ec2DescribeSecurityGroups(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, securityGroupFilters); err != nil {
		return nil, err
	}
	ids, names := c.list("GroupId"), c.list("GroupName")
	if err := idsWithMaxResults(c, append(ids, names...), "groupIds"); err != nil {
		return nil, err
	}
	var matched []SecurityGroup
	var apiErr *apiError
	c.e.locked(func(s *state) {
		byName := map[string]bool{}
		for _, g := range s.securityGroups {
			byName[g.Name] = true
		}
		for _, id := range ids {
			if s.securityGroups[id] == nil {
				apiErr = errorf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
				return
			}
		}
		for _, n := range names {
			if !byName[n] {
				apiErr = errorf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", n, s.vpcID)
				return
			}
		}
		wantIDs, wantNames := nameSet(ids...), nameSet(names...)
		for _, id := range sortedKeys(s.securityGroups) {
			g := s.securityGroups[id]
			if (len(wantIDs) > 0 || len(wantNames) > 0) && !wantIDs[g.ID] && !wantNames[g.Name] {
				continue
			}
			fields := fieldMap(map[string][]string{
				"group-id": {g.ID}, "group-name": {g.Name}, "vpc-id": {g.VPCID}, "description": {g.Description}, "owner-id": {s.opts.AccountID},
			})
			if matchFilters(filters, fields, g.Tags) {
				cp := *g
				cp.Tags = cloneTags(g.Tags)
				matched = append(matched, cp)
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 5, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("securityGroupInfo")
	for _, g := range items {
		b.open("item")
		b.leafAlways("ownerId", c.e.opts.AccountID)
		b.leafAlways("groupId", g.ID)
		b.leafAlways("groupName", g.Name)
		b.leafAlways("groupDescription", g.Description)
		b.leafAlways("vpcId", g.VPCID)
		b.leafAlways("securityGroupArn", "arn:aws:ec2:"+c.e.opts.Region+":"+c.e.opts.AccountID+":security-group/"+g.ID)
		b.open("ipPermissions")
		b.close("ipPermissions")
		b.open("ipPermissionsEgress")
		b.open("item")
		b.leafAlways("ipProtocol", "-1")
		b.open("ipRanges")
		b.open("item")
		b.leafAlways("cidrIp", "0.0.0.0/0")
		b.close("item")
		b.close("ipRanges")
		b.close("item")
		b.close("ipPermissionsEgress")
		b.tagSet("tagSet", "item", "key", "value", g.Tags)
		b.close("item")
	}
	b.close("securityGroupInfo")
	b.leaf("nextToken", next)
	return b.body(), nil
}
