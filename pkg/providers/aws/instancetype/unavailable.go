package instancetype

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// UnavailableOfferingsTTL is how long an offering EC2 had no capacity for is
// left out of launches (upstream's value).
const UnavailableOfferingsTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings (capacity type, instance type,
// zone) that recently failed to launch for lack of capacity, and capacity
// types that cannot be used at all for a while (spot without its service
// linked role). Entries expire after UnavailableOfferingsTTL on the clock.
// It is safe for concurrent use.
type UnavailableOfferings struct {
	clock clock.Clock

	mu      sync.Mutex
	expires map[string]time.Time
	seq     uint64
}

// NewUnavailableOfferings returns an empty cache on clk.
func NewUnavailableOfferings(clk clock.Clock) *UnavailableOfferings {
	return &UnavailableOfferings{clock: clk, expires: map[string]time.Time{}}
}

func offeringKey(capacityType, instanceType, zone string) string {
	return capacityType + ":" + instanceType + ":" + zone
}

func capacityTypeKey(capacityType string) string { return capacityType }

// MarkUnavailable takes the offering out of launches for the TTL (again, if
// it already was).
func (u *UnavailableOfferings) MarkUnavailable(capacityType, instanceType, zone string) {
	u.mark(offeringKey(capacityType, instanceType, zone))
}

func groupOfferingKey(group, partition, capacityType, instanceType, zone string) string {
	return "placement-group:" + group + ":" + partition + ":" + offeringKey(capacityType, instanceType, zone)
}

func groupZoneKey(group, capacityType, zone string) string {
	return "placement-group:" + group + ":zone:" + capacityType + ":" + zone
}

// MarkUnavailableInGroup takes the offering out of launches into the
// placement group (by id), or into one partition of it when partition is
// not "": a group's lack of room (a cluster group kept in another zone, a
// full partition) says nothing of launches outside it, as upstream scopes it.
func (u *UnavailableOfferings) MarkUnavailableInGroup(group, partition, capacityType, instanceType, zone string) {
	u.mark(groupOfferingKey(group, partition, capacityType, instanceType, zone))
}

// MarkZoneUnavailableInGroup takes every offering of the capacity type in
// the zone out of launches into the group: a spread group holds seven
// instances per zone whatever their type.
func (u *UnavailableOfferings) MarkZoneUnavailableInGroup(group, capacityType, zone string) {
	u.mark(groupZoneKey(group, capacityType, zone))
}

// IsUnavailableInGroup is IsUnavailable for launches into the placement
// group (and partition, when not ""): the offering is also unavailable when
// it was marked for the group, for that partition of it, or its zone was
// marked for the group.
func (u *UnavailableOfferings) IsUnavailableInGroup(group, partition, capacityType, instanceType, zone string) bool {
	if u.IsUnavailable(capacityType, instanceType, zone) {
		return true
	}
	if group == "" {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	return u.live(groupOfferingKey(group, "", capacityType, instanceType, zone), now) ||
		(partition != "" && u.live(groupOfferingKey(group, partition, capacityType, instanceType, zone), now)) ||
		u.live(groupZoneKey(group, capacityType, zone), now)
}

// MarkCapacityTypeUnavailable takes every offering of the capacity type out
// of launches for the TTL.
func (u *UnavailableOfferings) MarkCapacityTypeUnavailable(capacityType string) {
	u.mark(capacityTypeKey(capacityType))
}

func (u *UnavailableOfferings) mark(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expires[key] = u.clock.Now().Add(UnavailableOfferingsTTL)
	u.seq++
}

// Delete forgets an offering, e.g. after a launch into it succeeded.
func (u *UnavailableOfferings) Delete(capacityType, instanceType, zone string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.expires[offeringKey(capacityType, instanceType, zone)]; ok {
		delete(u.expires, offeringKey(capacityType, instanceType, zone))
		u.seq++
	}
}

// IsUnavailable reports whether the offering or its whole capacity type is
// marked and not expired, or whether every one of subnets (the class's
// subnets in the zone) ran out of addresses. As upstream's, one exhausted
// subnet of several leaves the zone's offerings available: launches move to
// another subnet of the zone (subnet.Provider.MarkExhausted). No subnets
// given: subnets are not considered.
func (u *UnavailableOfferings) IsUnavailable(capacityType, instanceType, zone string, subnets ...string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	if u.live(offeringKey(capacityType, instanceType, zone), now) || u.live(capacityTypeKey(capacityType), now) {
		return true
	}
	if len(subnets) == 0 {
		return false
	}
	for _, s := range subnets {
		if !u.live(subnetKey(s), now) {
			return false
		}
	}
	return true
}

func (u *UnavailableOfferings) live(key string, now time.Time) bool {
	at, ok := u.expires[key]
	return ok && now.Before(at)
}

// SeqNum changes whenever the set of unavailable offerings changes, expiries
// included, so that callers may cache what they derive from it.
func (u *UnavailableOfferings) SeqNum() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, at := range u.expires {
		if !now.Before(at) {
			delete(u.expires, k)
			u.seq++
		}
	}
	return u.seq
}
