package awsemulator

import (
	"strings"
	"time"
)

var instanceTypeFilters = func() map[string]bool {
	m := map[string]bool{}
	for k := range newInstanceType(&factsEntry{Name: "x.large", Labels: map[string]string{}}).filterFields {
		m[k] = true
	}
	return m
}()

// ec2DescribeInstanceTypes serves the catalog: InstanceType.N, Filter.N, MaxResults
// (5..100, default 100) and NextToken.
func ec2DescribeInstanceTypes(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, instanceTypeFilters); err != nil {
		return nil, err
	}
	names := c.list("InstanceType")
	var matched []*instanceType
	var apiErr *apiError
	c.e.locked(func(s *state) {
		var unknown []string
		for _, n := range names {
			if s.instanceTypeIndex[n] == nil {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			apiErr = errorf(400, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
			return
		}
		want := nameSet(names...)
		for _, it := range s.instanceTypes {
			if len(want) > 0 && !want[it.name] {
				continue
			}
			if matchFilters(filters, fieldMap(it.filterFields), nil) {
				matched = append(matched, it)
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 100, min: 5, max: 100})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.Grow(len(items) * 2200)
	b.open("instanceTypeSet")
	for _, it := range items {
		b.WriteString("<item>")
		b.WriteString(it.xml)
		b.WriteString("</item>")
	}
	b.close("instanceTypeSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

var offeringFilters = nameSet("instance-type", "location")

type offering struct{ instanceType, location string }

// ec2DescribeInstanceTypeOfferings: LocationType region (default), availability-zone or
// availability-zone-id; filters instance-type and location; MaxResults 5..1000.
func ec2DescribeInstanceTypeOfferings(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, offeringFilters); err != nil {
		return nil, err
	}
	locType := c.str("LocationType")
	if locType == "" {
		locType = "region"
	}
	if locType != "region" && locType != "availability-zone" && locType != "availability-zone-id" && locType != "outpost" {
		return nil, errorf(400, "InvalidParameterValue", "Value (%s) for parameter locationType is invalid. Valid values: region, availability-zone, availability-zone-id, outpost", locType)
	}
	var matched []offering
	c.e.locked(func(s *state) {
		for _, it := range s.instanceTypes {
			var locations []string
			switch locType {
			case "region":
				locations = []string{s.opts.Region}
			case "availability-zone", "availability-zone-id":
				for _, z := range s.zones {
					if !s.offered[it.name][z.name] {
						continue
					}
					if locType == "availability-zone" {
						locations = append(locations, z.name)
					} else {
						locations = append(locations, z.id)
					}
				}
			}
			for _, loc := range locations {
				fields := fieldMap(map[string][]string{"instance-type": {it.name}, "location": {loc}})
				if matchFilters(filters, fields, nil) {
					matched = append(matched, offering{it.name, loc})
				}
			}
		}
	})
	items, next, apiErr := paginate(c, matched, page{def: 1000, min: 5, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.Grow(len(items) * 120)
	b.open("instanceTypeOfferingSet")
	for _, o := range items {
		b.open("item")
		b.leafAlways("instanceType", o.instanceType)
		b.leafAlways("locationType", locType)
		b.leafAlways("location", o.location)
		b.close("item")
	}
	b.close("instanceTypeOfferingSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

// spotTimestamp is when the seeded spot prices took effect.
var spotTimestamp = time.Date(2025, 11, 15, 0, 0, 0, 0, time.UTC)

var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

var spotFilters = nameSet("availability-zone", "instance-type", "product-description", "spot-price", "timestamp")

type spotEntry struct {
	instanceType, zone, zoneID, product string
	price                               float64
}

// ec2DescribeSpotPriceHistory serves one current price per (type, zone, Linux product).
func ec2DescribeSpotPriceHistory(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, spotFilters); err != nil {
		return nil, err
	}
	types, products := nameSet(c.list("InstanceType")...), nameSet(c.list("ProductDescription")...)
	az, azID := c.str("AvailabilityZone"), c.str("AvailabilityZoneId")
	if end := c.str("EndTime"); end != "" {
		if t, err := time.Parse(time.RFC3339, end); err == nil && t.Before(spotTimestamp) {
			return xmlBody("<spotPriceHistorySet></spotPriceHistorySet>"), nil
		}
	}
	var matched []spotEntry
	c.e.locked(func(s *state) {
		for _, it := range s.instanceTypes {
			if len(types) > 0 && !types[it.name] {
				continue
			}
			for _, z := range s.zones {
				price, ok := s.spotPrices[offeringKey{it.name, z.name}]
				if !ok || (az != "" && az != z.name) || (azID != "" && azID != z.id) {
					continue
				}
				for _, p := range spotProducts {
					if len(products) > 0 && !products[p] {
						continue
					}
					e := spotEntry{it.name, z.name, z.id, p, price}
					fields := fieldMap(map[string][]string{
						"availability-zone": {z.name}, "instance-type": {it.name}, "product-description": {p},
						"spot-price": {formatPrice(price, 6)}, "timestamp": {spotTimestamp.Format("2006-01-02T15:04:05.000Z")},
					})
					if matchFilters(filters, fields, nil) {
						matched = append(matched, e)
					}
				}
			}
		}
	})
	if n, ok, err := c.integer("MaxResults"); err != nil {
		return nil, err
	} else if ok && n == 0 {
		c.form.Del("MaxResults") // 0 means the default for this call
	}
	items, next, apiErr := paginate(c, matched, page{def: 1000, min: 0, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.Grow(len(items) * 260)
	b.open("spotPriceHistorySet")
	for _, e := range items {
		b.open("item")
		b.leafAlways("instanceType", e.instanceType)
		b.leafAlways("productDescription", e.product)
		b.leafAlways("spotPrice", formatPrice(e.price, 6))
		b.timestamp("timestamp", spotTimestamp)
		b.leafAlways("availabilityZone", e.zone)
		b.leafAlways("availabilityZoneId", e.zoneID)
		b.close("item")
	}
	b.close("spotPriceHistorySet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

// SetInstanceTypeFeatures makes DescribeInstanceTypes report, for one
// instance type, Nitro Enclaves support (nitroEnclavesSupport "supported"
// or "unsupported") and processorInfo.supportedFeatures (e.g.
// "nested-virtualization"). The facts file has neither, so by default the
// emulator reports neither; a test that needs them sets them here. It
// reports false for an unknown instance type.
func (e *Emulator) SetInstanceTypeFeatures(name string, nitroEnclaves bool, processorFeatures ...string) bool {
	found := false
	e.locked(func(s *state) {
		old := s.instanceTypeIndex[name]
		if old == nil {
			return
		}
		found = true
		it := *old
		xml := old.xml
		// Drop what an earlier call added.
		if i := strings.Index(xml, "<nitroEnclavesSupport>"); i >= 0 {
			j := strings.Index(xml[i:], "</nitroEnclavesSupport>") + i + len("</nitroEnclavesSupport>")
			xml = xml[:i] + xml[j:]
		}
		if i := strings.Index(xml, "<supportedFeatures>"); i >= 0 {
			j := strings.Index(xml[i:], "</supportedFeatures>") + i + len("</supportedFeatures>")
			xml = xml[:i] + xml[j:]
		}
		var features strings.Builder
		if len(processorFeatures) > 0 {
			features.WriteString("<supportedFeatures>")
			for _, f := range processorFeatures {
				features.WriteString("<item>" + f + "</item>")
			}
			features.WriteString("</supportedFeatures>")
		}
		xml = strings.Replace(xml, "</processorInfo>", features.String()+"</processorInfo>", 1)
		support := "unsupported"
		if nitroEnclaves {
			support = "supported"
		}
		it.xml = xml + "<nitroEnclavesSupport>" + support + "</nitroEnclavesSupport>"
		// The catalog is shared between emulators: copy before changing.
		index := make(map[string]*instanceType, len(s.instanceTypeIndex))
		for k, v := range s.instanceTypeIndex {
			index[k] = v
		}
		index[name] = &it
		types := make([]*instanceType, len(s.instanceTypes))
		for i, t := range s.instanceTypes {
			if t.name == name {
				t = &it
			}
			types[i] = t
		}
		s.instanceTypeIndex, s.instanceTypes = index, types
	})
	return found
}
