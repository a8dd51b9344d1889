package instancetype

// zoneKey marks every offering of a zone (its subnets ran out of addresses).
func zoneKey(zone string) string { return "zone:" + zone }

// MarkZoneUnavailable takes every offering in zone out of launches for the
// TTL: the subnet chosen there has no free address, so any launch there would
// fail the same way (upstream marks on InsufficientFreeAddressesInSubnet).
func (u *UnavailableOfferings) MarkZoneUnavailable(zone string) { u.mark(zoneKey(zone)) }
