package awsemulator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PreexistingInstance describes an instance that was running before the test began,
// e.g. one an older Karpenter launched (see SeedRunningInstance).
type PreexistingInstance struct {
	InstanceType string
	Zone         string // "" for the zone of the first subnet
	CapacityType string // "on-demand" (default) | "spot"
	Tenancy      string // "default" (default) | "dedicated"
	ImageID      string
	// SecurityGroupIDs default to the security groups tagged as the cluster's
	// (kubernetes.io/cluster/<cluster>), which Karpenter's discovery selects.
	SecurityGroupIDs []string
	Tags             map[string]string
	// LaunchTime defaults to now.
	LaunchTime time.Time
	// Labels and Taints are the kubelet's --node-labels / --register-with-taints,
	// written on the returned Node.
	Labels map[string]string
	Taints []corev1.Taint
}

// SeedRunningInstance adds an instance that is already running, in the first subnet
// of its zone, as if it had been launched before this emulator started (no launch
// template, no fleet). It returns the instance and the Node its kubelet registered,
// which the caller creates (the emulator does not, since the Node predates it); once
// the instance terminates, its Node is deleted as for any other instance.
func (e *Emulator) SeedRunningInstance(p PreexistingInstance) (Instance, *corev1.Node, error) {
	var (
		out  Instance
		node *corev1.Node
		err  error
	)
	e.locked(func(s *state) {
		it := s.instanceTypeIndex[p.InstanceType]
		if it == nil {
			err = fmt.Errorf("instance type %q is not in the catalog", p.InstanceType)
			return
		}
		var subnet *Subnet
		for _, id := range sortedKeys(s.subnets) {
			if sn := s.subnets[id]; sn.Zone == p.Zone || p.Zone == "" {
				subnet = sn
				break
			}
		}
		if subnet == nil {
			err = fmt.Errorf("no subnet in zone %q", p.Zone)
			return
		}
		capacityType := p.CapacityType
		if capacityType == "" {
			capacityType = "on-demand"
		}
		launched := p.LaunchTime
		if launched.IsZero() {
			launched = s.now()
		}
		seq := s.nextSeq()
		ip := s.nextAddress(subnet)
		in := &Instance{
			ID: hexID("i", "preexisting", seq), InstanceType: p.InstanceType, Architecture: it.arch,
			Zone: subnet.Zone, ZoneID: subnet.ZoneID, SubnetID: subnet.ID, VPCID: subnet.VPCID, ImageID: p.ImageID,
			CapacityType: capacityType, State: "running", LaunchTime: launched.UTC().Truncate(time.Second),
			PrivateIP: ip, PrivateDNSName: "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + s.opts.Region + ".compute.internal",
			Tags: cloneTags(p.Tags), MetadataOptions: map[string]string{"HttpTokens": "required", "HttpPutResponseHopLimit": "2"},
			Tenancy: p.Tenancy,
		}
		if capacityType == "spot" {
			in.SpotRequestID = "sir-" + hashHex(8, "spot-request", in.ID)
		}
		in.SecurityGroupIDs = append([]string(nil), p.SecurityGroupIDs...)
		if len(in.SecurityGroupIDs) == 0 {
			for _, id := range sortedKeys(s.securityGroups) {
				if _, ok := s.securityGroups[id].Tags["kubernetes.io/cluster/"+s.opts.ClusterName]; ok {
					in.SecurityGroupIDs = append(in.SecurityGroupIDs, id)
				}
			}
		}
		subnet.AvailableIPs--
		s.instances[in.ID] = in
		s.instanceOrder = append(s.instanceOrder, in.ID)
		s.life().since[in.ID] = s.now()
		nb := &NodeBootstrap{Labels: p.Labels, Taints: p.Taints}
		node = buildNode(s.opts, in, it, nb, 20, false, s.cluster.Version)
		out = in.clone()
	})
	return out, node, err
}

// Parameter returns an SSM parameter's value (e.g. the image an AMI alias
// resolves to), false when it does not exist.
func (e *Emulator) Parameter(name string) (string, bool) {
	var (
		v  string
		ok bool
	)
	e.locked(func(s *state) {
		if p := s.parameters[name]; p != nil {
			v, ok = p.Value, true
		}
	})
	return v, ok
}
