package v1

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
)

// Hash of the EC2NodeClass's static spec fields, stamped on NodeClaims as
// karpenter.k8s.aws/ec2nodeclass-hash so that a changed class drifts its
// nodes. As upstream, the fields tagged hash:"ignore" are left out (selector
// terms drift through what they resolve to, in status; the AMI family through
// the AMIs), and the kubelet configuration is hashed as its JSON with sorted
// keys, so that any kubelet change, a passed-through field included, drifts
// the class's nodes as upstream's does. Zero values and
// empty lists hash as absent, and block device mappings and network
// interfaces are sets. A change of
// this function's output for an unchanged spec needs a new
// EC2NodeClassHashVersion, so an upgrade does not roll the fleet.
func (in *EC2NodeClass) Hash() string {
	spec := in.Spec.DeepCopy()
	spec.SubnetSelectorTerms = nil
	spec.SecurityGroupSelectorTerms = nil
	spec.AMISelectorTerms = nil
	spec.AMIFamily = nil
	kubelet := ""
	if spec.Kubelet != nil && spec.Kubelet.String() != "{}" {
		kubelet = spec.Kubelet.String()
	}
	spec.Kubelet = nil
	spec.IPPrefixCount = nil
	spec.CapacityReservationSelectorTerms = nil
	if len(spec.Tags) == 0 {
		spec.Tags = nil
	}
	bdms := make([]string, 0, len(spec.BlockDeviceMappings))
	for _, b := range spec.BlockDeviceMappings {
		if b == nil {
			continue
		}
		if b.EBS != nil && b.EBS.VolumeSize != nil {
			// Quantities hash by value: 100Gi and 102400Mi are the same size.
			q := b.EBS.VolumeSize.String()
			b.EBS.VolumeSize = nil
			data, _ := json.Marshal(b)
			bdms = append(bdms, string(data)+q)
			continue
		}
		data, _ := json.Marshal(b)
		bdms = append(bdms, string(data))
	}
	sort.Strings(bdms)
	spec.BlockDeviceMappings = nil
	// Network interfaces are a set too: reordering them is no change.
	sort.SliceStable(spec.NetworkInterfaces, func(i, j int) bool {
		a, b := spec.NetworkInterfaces[i], spec.NetworkInterfaces[j]
		if a == nil || b == nil {
			return b != nil
		}
		if a.NetworkCardIndex != b.NetworkCardIndex {
			return a.NetworkCardIndex < b.NetworkCardIndex
		}
		if a.DeviceIndex != b.DeviceIndex {
			return a.DeviceIndex < b.DeviceIndex
		}
		return a.InterfaceType < b.InterfaceType
	})
	data, _ := json.Marshal(struct {
		Spec    *EC2NodeClassSpec `json:"spec"`
		BDMs    []string          `json:"bdms,omitempty"`
		Kubelet string            `json:"kubelet,omitempty"`
	}{spec, bdms, kubelet})
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 10)
}
