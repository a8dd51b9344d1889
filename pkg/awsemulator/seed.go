package awsemulator

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

//go:embed data/cluster-ca.crt
var clusterCAPEM []byte

// seedTime is when the seeded world was created (fixed, so answers are reproducible).
var seedTime = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)

// commonTypes are offered in every zone, so tests can rely on them anywhere.
var commonTypes = map[string]bool{
	"m5.large": true, "m5.xlarge": true, "m5.2xlarge": true, "c5.large": true, "c5.xlarge": true,
	"r5.large": true, "t3.medium": true, "t3.large": true, "m6g.large": true, "c6g.large": true,
	"m7i.large": true, "m7g.large": true,
}

// seed builds the default world of the contract for opts (defaults already applied).
func seed(opts Options) (*state, error) {
	cat, err := loadCatalog()
	if err != nil {
		return nil, err
	}
	s := &state{
		opts:              opts,
		vpcID:             hexID("vpc", opts.ClusterName, opts.Region),
		subnets:           map[string]*Subnet{},
		securityGroups:    map[string]*SecurityGroup{},
		images:            map[string]*Image{},
		instanceTypes:     cat.types,
		instanceTypeIndex: cat.index,
		offered:           map[string]map[string]bool{},
		spotPrices:        map[offeringKey]float64{},
		insufficient:      map[capacityKey]bool{},
		parameters:        map[string]*Parameter{},
		roles:             map[string]*Role{},
		instanceProfiles:  map[string]*InstanceProfile{},
		queues:            map[string]*queue{},
		denied:            map[string]bool{},
		launchTemplates:   map[string]*LaunchTemplate{},
		instances:         map[string]*Instance{},
		addressSeq:        map[string]int{},
	}
	prefix := zoneIDPrefix(opts.Region)
	for i, z := range opts.Zones {
		s.zones = append(s.zones, zone{name: z, id: fmt.Sprintf("%s-az%d", prefix, i+1)})
	}
	s.seedNetwork()
	s.seedOfferings()
	s.seedImages()
	s.addRole("KarpenterNodeRole-"+opts.ClusterName, seedTime)
	s.cluster = &Cluster{
		Name:                 opts.ClusterName,
		ARN:                  fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", opts.Region, opts.AccountID, opts.ClusterName),
		Version:              opts.KubernetesVersion,
		Endpoint:             fmt.Sprintf("https://%s.gr7.%s.eks.amazonaws.com", strings.ToUpper(hashHex(32, "endpoint", opts.ClusterName, opts.Region)), opts.Region),
		CertificateAuthority: base64.StdEncoding.EncodeToString(clusterCAPEM),
		ServiceIPv4CIDR:      "10.100.0.0/16",
		Status:               "ACTIVE",
		PlatformVersion:      "eks.1",
		RoleARN:              "arn:aws:iam::" + opts.AccountID + ":role/" + opts.ClusterName + "-cluster",
		CreatedAt:            seedTime,
	}
	return s, nil
}

// zoneIDPrefix abbreviates a region as AWS zone IDs do: us-west-2 -> usw2, ap-northeast-1 -> apne1.
func zoneIDPrefix(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return region
	}
	dirs := map[string]string{"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}
	out := parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		if d, ok := dirs[p]; ok {
			out += d
		} else {
			out += p[:1]
		}
	}
	return out + parts[len(parts)-1]
}

func (s *state) seedNetwork() {
	c := s.opts.ClusterName
	for i, z := range s.zones {
		priv := &Subnet{
			ID: hexID("subnet", c, s.opts.Region, "private", z.name), VPCID: s.vpcID, Zone: z.name, ZoneID: z.id,
			CIDR: fmt.Sprintf("10.0.%d.0/19", 32*i), AvailableIPs: 8187,
			Tags: map[string]string{"karpenter.sh/discovery": c, "Name": c + "-private-" + z.name},
		}
		pub := &Subnet{
			ID: hexID("subnet", c, s.opts.Region, "public", z.name), VPCID: s.vpcID, Zone: z.name, ZoneID: z.id,
			CIDR: fmt.Sprintf("10.0.%d.0/24", 192+i), AvailableIPs: 251, MapPublicIPOnLaunch: true,
			Tags: map[string]string{"Name": c + "-public-" + z.name, "kubernetes.io/role/elb": "1"},
		}
		s.subnets[priv.ID] = priv
		s.subnets[pub.ID] = pub
	}
	clusterSG := &SecurityGroup{
		ID: hexID("sg", c, s.opts.Region, "cluster"), Name: "eks-cluster-sg-" + c, VPCID: s.vpcID,
		Description: "EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.",
		Tags:        map[string]string{"karpenter.sh/discovery": c, "kubernetes.io/cluster/" + c: "owned", "Name": "eks-cluster-sg-" + c},
	}
	def := &SecurityGroup{ID: hexID("sg", c, s.opts.Region, "default"), Name: "default", VPCID: s.vpcID,
		Description: "default VPC security group", Tags: map[string]string{}}
	s.securityGroups[clusterSG.ID] = clusterSG
	s.securityGroups[def.ID] = def
}

// seedOfferings decides, deterministically, where each type is offered (about 85% of
// (type, zone) pairs, at least one zone per type, common types everywhere) and its
// spot price there (on-demand x a factor in [0.30, 0.70], 4 decimals).
func (s *state) seedOfferings() {
	for _, it := range s.instanceTypes {
		zones := map[string]bool{}
		for _, z := range s.zones {
			if commonTypes[it.name] || fraction("offering", it.name, z.name) < 0.85 {
				zones[z.name] = true
			}
		}
		if len(zones) == 0 && len(s.zones) > 0 {
			zones[s.zones[int(fraction("fallback-zone", it.name)*float64(len(s.zones)))].name] = true
		}
		s.offered[it.name] = zones
		if it.onDemandUSD <= 0 {
			continue
		}
		for z := range zones {
			factor := 0.30 + 0.40*fraction("spot", it.name, z)
			s.spotPrices[offeringKey{it.name, z}] = roundTo(it.onDemandUSD*factor, 4)
		}
	}
}

func roundTo(v float64, decimals int) float64 {
	p := 1.0
	for i := 0; i < decimals; i++ {
		p *= 10
	}
	r := float64(int64(v*p+0.5)) / p
	if r == 0 && v > 0 {
		r = 1 / p
	}
	return r
}
