package awsemulator

// Price is what an instance of the type costs per hour in the zone: the spot price for
// capacityType "spot", else the on-demand price. false when the emulator has none.
func (e *Emulator) Price(instanceType, zone, capacityType string) (float64, bool) {
	var p float64
	var ok bool
	e.locked(func(s *state) {
		if capacityType == "spot" {
			p, ok = s.spotPrices[offeringKey{instanceType, zone}]
			return
		}
		if it := s.instanceTypeIndex[instanceType]; it != nil && it.onDemandUSD > 0 {
			p, ok = it.onDemandUSD, true
		}
	})
	return p, ok
}

// Cluster is the emulated EKS cluster (endpoint, CA, service CIDR).
func (e *Emulator) Cluster() Cluster {
	var c Cluster
	e.locked(func(s *state) { c = *s.cluster })
	return c
}
