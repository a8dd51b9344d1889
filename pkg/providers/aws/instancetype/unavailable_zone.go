package instancetype

// subnetKey marks a subnet that ran out of addresses.
func subnetKey(subnetID string) string { return "subnet:" + subnetID }

// MarkSubnetUnavailable records for the TTL (upstream's
// UnavailableOfferingsTTL, 3 minutes) that a launch into subnetID failed with
// InsufficientFreeAddressesInSubnet. Only the subnet is marked, not its zone:
// a zone's offerings become unavailable once all of the class's subnets there
// are marked (IsUnavailable), since another subnet of the zone may still have
// addresses.
func (u *UnavailableOfferings) MarkSubnetUnavailable(subnetID string) { u.mark(subnetKey(subnetID)) }

// IsSubnetUnavailable reports whether subnetID is marked and not expired.
func (u *UnavailableOfferings) IsSubnetUnavailable(subnetID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.live(subnetKey(subnetID), u.clock.Now())
}
