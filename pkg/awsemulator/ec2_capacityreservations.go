package awsemulator

import "time"

// CapacityReservation is an EC2 capacity reservation (an On-Demand Capacity
// Reservation or a Capacity Block). None are seeded: tests add the ones they
// need with AddCapacityReservation. Zero fields are filled in there.
type CapacityReservation struct {
	ID                     string // "" = derived from the call sequence (cr-<17 hex>)
	OwnerID                string // "" = the emulator's account
	InstanceType           string
	Zone                   string // availability zone name
	InstancePlatform       string // "" = Linux/UNIX
	Tenancy                string // "" = default
	TotalInstanceCount     int    // 0 = 1
	AvailableInstanceCount int    // negative = 0; 0 = TotalInstanceCount
	InstanceMatchCriteria  string // open | targeted; "" = open
	ReservationType        string // default | capacity-block; "" = default
	State                  string // active, expired, cancelled, pending, ...; "" = active
	Interruptible          bool
	StartDate              time.Time
	EndDate                time.Time // zero: no end (endDateType unlimited)
	Tags                   map[string]string
}

// AddCapacityReservation adds (or replaces, by ID) a reservation and returns
// it with defaults filled in.
func (e *Emulator) AddCapacityReservation(cr CapacityReservation) CapacityReservation {
	var out CapacityReservation
	e.locked(func(s *state) {
		if cr.ID == "" {
			cr.ID = hexID("cr", "added", s.nextSeq())
		}
		if cr.OwnerID == "" {
			cr.OwnerID = s.opts.AccountID
		}
		if cr.InstancePlatform == "" {
			cr.InstancePlatform = "Linux/UNIX"
		}
		if cr.Tenancy == "" {
			cr.Tenancy = "default"
		}
		if cr.TotalInstanceCount == 0 {
			cr.TotalInstanceCount = 1
		}
		switch {
		case cr.AvailableInstanceCount < 0:
			cr.AvailableInstanceCount = 0
		case cr.AvailableInstanceCount == 0:
			cr.AvailableInstanceCount = cr.TotalInstanceCount
		}
		if cr.InstanceMatchCriteria == "" {
			cr.InstanceMatchCriteria = "open"
		}
		if cr.ReservationType == "" {
			cr.ReservationType = "default"
		}
		if cr.State == "" {
			cr.State = "active"
		}
		cr.Tags = cloneTags(cr.Tags)
		if s.capacityReservations == nil { // none are seeded; reading a nil map is fine
			s.capacityReservations = map[string]*CapacityReservation{}
		}
		s.capacityReservations[cr.ID] = &cr
		out = cr
		out.Tags = cloneTags(cr.Tags)
	})
	return out
}

// capacityReservationTargetKey is the launch template parameter naming the reservation its
// instances launch into.
const capacityReservationTargetKey = "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"

// CapacityReservations returns every reservation, sorted by ID, with its current
// AvailableInstanceCount: an instance launched into one takes a slot until it terminates.
func (e *Emulator) CapacityReservations() []CapacityReservation {
	var out []CapacityReservation
	e.locked(func(s *state) {
		s.observeInstances()
		for _, id := range sortedKeys(s.capacityReservations) {
			cr := *s.capacityReservations[id]
			cr.Tags = cloneTags(cr.Tags)
			out = append(out, cr)
		}
	})
	return out
}

// ReservationRefusals counts the fleet requests EC2 refused with ReservationCapacityExceeded
// because the reservation they targeted had no free slot: a launch path that never over-books
// leaves it at zero.
func (e *Emulator) ReservationRefusals(id string) int {
	var n int
	e.locked(func(s *state) { n = s.reservationRefusals[id] })
	return n
}

// RemoveCapacityReservation deletes a reservation; false if it did not exist.
func (e *Emulator) RemoveCapacityReservation(id string) bool {
	found := false
	e.locked(func(s *state) { found = removed(s.capacityReservations, id) })
	return found
}

var capacityReservationFilters = nameSet("capacity-reservation-id", "instance-type", "owner-id", "availability-zone",
	"availability-zone-id", "instance-platform", "tenancy", "state", "start-date", "end-date", "end-date-type",
	"instance-match-criteria", "reservation-type", "capacity-reservation-arn")

func capacityReservationARN(s *state, cr *CapacityReservation) string {
	return "arn:aws:ec2:" + s.opts.Region + ":" + cr.OwnerID + ":capacity-reservation/" + cr.ID
}

func endDateType(cr *CapacityReservation) string {
	if cr.EndDate.IsZero() {
		return "unlimited"
	}
	return "limited"
}

func ec2DescribeCapacityReservations(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, capacityReservationFilters); err != nil {
		return nil, err
	}
	ids := c.list("CapacityReservationId")
	if err := idsWithMaxResults(c, ids, "capacityReservationIds"); err != nil {
		return nil, err
	}
	type row struct {
		cr     CapacityReservation
		arn    string
		zoneID string
	}
	var matched []row
	var apiErr *apiError
	c.e.locked(func(s *state) {
		for _, id := range ids {
			if s.capacityReservations[id] == nil {
				apiErr = errorf(400, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
				return
			}
		}
		want := nameSet(ids...)
		for _, id := range sortedKeys(s.capacityReservations) {
			cr := s.capacityReservations[id]
			if len(want) > 0 && !want[id] {
				continue
			}
			fields := fieldMap(map[string][]string{
				"capacity-reservation-id": {cr.ID}, "instance-type": {cr.InstanceType}, "owner-id": {cr.OwnerID},
				"availability-zone": {cr.Zone}, "availability-zone-id": {s.zoneID(cr.Zone)}, "instance-platform": {cr.InstancePlatform},
				"tenancy": {cr.Tenancy}, "state": {cr.State}, "instance-match-criteria": {cr.InstanceMatchCriteria},
				"reservation-type": {cr.ReservationType}, "end-date-type": {endDateType(cr)},
				"start-date": {cr.StartDate.UTC().Format(time.RFC3339)}, "end-date": {cr.EndDate.UTC().Format(time.RFC3339)},
				"capacity-reservation-arn": {capacityReservationARN(s, cr)},
			})
			if matchFilters(filters, fields, cr.Tags) {
				cp := *cr
				cp.Tags = cloneTags(cr.Tags)
				matched = append(matched, row{cr: cp, arn: capacityReservationARN(s, cr), zoneID: s.zoneID(cr.Zone)})
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 1, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("capacityReservationSet")
	for _, r := range items {
		cr := r.cr
		b.open("item")
		b.leafAlways("capacityReservationId", cr.ID)
		b.leafAlways("capacityReservationArn", r.arn)
		b.leafAlways("ownerId", cr.OwnerID)
		b.leafAlways("availabilityZone", cr.Zone)
		b.leaf("availabilityZoneId", r.zoneID)
		b.leafAlways("instanceType", cr.InstanceType)
		b.leafAlways("instancePlatform", cr.InstancePlatform)
		b.leafAlways("tenancy", cr.Tenancy)
		b.integer("totalInstanceCount", int64(cr.TotalInstanceCount))
		b.integer("availableInstanceCount", int64(cr.AvailableInstanceCount))
		b.boolean("ebsOptimized", true)
		b.boolean("ephemeralStorage", false)
		b.leafAlways("state", cr.State)
		b.timestamp("startDate", cr.StartDate)
		b.timestamp("endDate", cr.EndDate)
		b.leafAlways("endDateType", endDateType(&cr))
		b.leafAlways("instanceMatchCriteria", cr.InstanceMatchCriteria)
		b.leafAlways("reservationType", cr.ReservationType)
		b.boolean("interruptible", cr.Interruptible)
		b.timestamp("createDate", cr.StartDate)
		b.tagSet("tagSet", "item", "key", "value", cr.Tags)
		b.close("item")
	}
	b.close("capacityReservationSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}
