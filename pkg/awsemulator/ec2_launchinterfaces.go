package awsemulator

import (
	"fmt"
	"sort"
	"strconv"
)

// LaunchInterface is one network interface a launch template asks for
// (its NetworkInterface.N.* parameters), or one an instance launched with.
type LaunchInterface struct {
	NetworkCardIndex int
	DeviceIndex      int
	// InterfaceType is interface, efa or efa-only ("" is interface).
	InterfaceType    string
	SecurityGroupIDs []string
	SubnetID         string
	// AssociatePublicIPAddress is the interface's AssociatePublicIpAddress
	// ("" unset, else true or false).
	AssociatePublicIPAddress string
	// Ipv4PrefixCount and Ipv6PrefixCount are the prefixes asked for,
	// Ipv6AddressCount the IPv6 addresses, and PrimaryIPv6 whether the
	// first of them is the interface's primary IPv6 address (0 and false
	// when unset).
	Ipv4PrefixCount  int
	Ipv6PrefixCount  int
	Ipv6AddressCount int
	PrimaryIPv6      bool
}

// NetworkInterfaces lists the template's NetworkInterface.N, in order.
func (lt *LaunchTemplate) NetworkInterfaces() []LaunchInterface {
	var out []LaunchInterface
	for i := 1; hasKeyPrefix(lt.Data, "NetworkInterface."+strconv.Itoa(i)+"."); i++ {
		p := "NetworkInterface." + strconv.Itoa(i) + "."
		number := func(key string) int {
			n, _ := strconv.Atoi(lt.Data[p+key])
			return n
		}
		out = append(out, LaunchInterface{
			NetworkCardIndex: number("NetworkCardIndex"), DeviceIndex: number("DeviceIndex"), InterfaceType: lt.Data[p+"InterfaceType"],
			SecurityGroupIDs: indexed(lt.Data, p+"SecurityGroupId"), SubnetID: lt.Data[p+"SubnetId"],
			AssociatePublicIPAddress: lt.Data[p+"AssociatePublicIpAddress"],
			Ipv4PrefixCount:          number("Ipv4PrefixCount"), Ipv6PrefixCount: number("Ipv6PrefixCount"),
			Ipv6AddressCount: number("Ipv6AddressCount"), PrimaryIPv6: lt.Data[p+"PrimaryIpv6"] == "true",
		})
	}
	return out
}

// groupIDs are the security groups of a template: SecurityGroupId.N, else
// (interfaces carry them) those of its interfaces, each once.
func (lt *LaunchTemplate) groupIDs() []string {
	if ids := lt.SecurityGroupIDs(); len(ids) > 0 {
		return ids
	}
	seen := map[string]bool{}
	var out []string
	for _, ni := range lt.NetworkInterfaces() {
		for _, g := range ni.SecurityGroupIDs {
			if !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// interfacesUnfulfillable is EC2's refusal of the template's interfaces on
// the instance type: IP settings on an efa-only interface (which carries no
// IP traffic), a primary IPv6 address without an IPv6 address, an EFA (efa
// or efa-only) interface on a type without EFA support, more EFA interfaces
// than the type has, a network card the type does not have, or a device
// index beyond its card's interfaces.
func interfacesUnfulfillable(lt *LaunchTemplate, it *instanceType) (string, string) {
	efas := 0
	for i, ni := range lt.NetworkInterfaces() {
		if ni.InterfaceType == "efa-only" {
			for _, p := range []struct {
				name string
				set  bool
			}{
				{"AssociatePublicIpAddress", ni.AssociatePublicIPAddress != ""}, {"Ipv4PrefixCount", ni.Ipv4PrefixCount > 0},
				{"Ipv6PrefixCount", ni.Ipv6PrefixCount > 0}, {"Ipv6AddressCount", ni.Ipv6AddressCount > 0}, {"PrimaryIpv6", ni.PrimaryIPv6},
			} {
				if p.set {
					return "InvalidParameterValue", fmt.Sprintf("Network interface %d is of type efa-only, which does not support %s.", i+1, p.name)
				}
			}
		}
		if ni.PrimaryIPv6 && ni.Ipv6AddressCount == 0 {
			return "InvalidParameterCombination", fmt.Sprintf("Network interface %d sets PrimaryIpv6 but is assigned no IPv6 address; set Ipv6AddressCount.", i+1)
		}
		if ni.InterfaceType == "efa" || ni.InterfaceType == "efa-only" {
			if it.efaMax == 0 {
				return "InvalidParameterCombination", fmt.Sprintf("Interface type %s is not supported for instance type %s: the instance type does not support Elastic Fabric Adapter (EFA).", ni.InterfaceType, it.name)
			}
			efas++
		}
		limit, ok := it.cards[ni.NetworkCardIndex]
		if !ok {
			return "InvalidParameterValue", fmt.Sprintf("Network card index %d is invalid for instance type %s, which has network cards %s.", ni.NetworkCardIndex, it.name, cardIndexes(it))
		}
		if ni.DeviceIndex >= limit {
			return "InvalidParameterValue", fmt.Sprintf("Device index %d on network card %d exceeds the %d network interfaces instance type %s supports on that card.", ni.DeviceIndex, ni.NetworkCardIndex, limit, it.name)
		}
	}
	if efas > it.efaMax {
		return "InvalidParameterCombination", fmt.Sprintf("The number of EFA interfaces (%d) exceeds the maximum of %d for instance type %s.", efas, it.efaMax, it.name)
	}
	return "", ""
}

func cardIndexes(it *instanceType) string {
	var idx []int
	for i := range it.cards {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return fmt.Sprint(idx)
}

// ipv6Addresses are the IPv6 addresses of an instance's interface: the
// emulator's subnets have no IPv6 CIDR, so each interface gets a /64 of its
// own in 2600:1f13::/32, derived from the instance and the interface's
// position (stable across DescribeInstances calls).
func ipv6Addresses(instanceID string, index int, ni LaunchInterface) (addresses, prefixes []string) {
	h := hashHex(8, "ipv6", instanceID, strconv.Itoa(index))
	network := fmt.Sprintf("2600:1f13:%s:%s", h[:4], h[4:])
	for j := 0; j < ni.Ipv6AddressCount; j++ {
		addresses = append(addresses, fmt.Sprintf("%s::%x", network, j+1))
	}
	for j := 0; j < ni.Ipv6PrefixCount; j++ {
		prefixes = append(prefixes, fmt.Sprintf("%s:%x::/80", network, j+1))
	}
	return addresses, prefixes
}
