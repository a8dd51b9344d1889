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
}

// NetworkInterfaces lists the template's NetworkInterface.N, in order.
func (lt *LaunchTemplate) NetworkInterfaces() []LaunchInterface {
	var out []LaunchInterface
	for i := 1; hasKeyPrefix(lt.Data, "NetworkInterface."+strconv.Itoa(i)+"."); i++ {
		p := "NetworkInterface." + strconv.Itoa(i) + "."
		card, _ := strconv.Atoi(lt.Data[p+"NetworkCardIndex"])
		device, _ := strconv.Atoi(lt.Data[p+"DeviceIndex"])
		out = append(out, LaunchInterface{
			NetworkCardIndex: card, DeviceIndex: device, InterfaceType: lt.Data[p+"InterfaceType"],
			SecurityGroupIDs: indexed(lt.Data, p+"SecurityGroupId"), SubnetID: lt.Data[p+"SubnetId"],
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
// the instance type: an EFA (efa or efa-only) interface on a type without
// EFA support, more EFA interfaces than the type has, a network card the
// type does not have, or a device index beyond its card's interfaces.
func interfacesUnfulfillable(lt *LaunchTemplate, it *instanceType) (string, string) {
	efas := 0
	for _, ni := range lt.NetworkInterfaces() {
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
