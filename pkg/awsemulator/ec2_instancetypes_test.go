package awsemulator_test

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

type fact struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	VPC    *struct {
		ENIs       int      `json:"enis"`
		IPv4PerENI int      `json:"ipv4PerEni"`
		Cards      [][2]int `json:"cards"`
	} `json:"vpc"`
	OnDemandUSD float64 `json:"onDemandUSD_us_east_1"`
	EFA         int     `json:"efaMaxInterfaces"`
}

func loadFacts(t testing.TB) map[string]fact {
	f, err := os.Open("data/ec2-instance-types.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var list []fact
	if err := json.NewDecoder(zr).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := map[string]fact{}
	for _, f := range list {
		out[f.Name] = f
	}
	return out
}

func allInstanceTypes(t testing.TB, c *clients, in *ec2.DescribeInstanceTypesInput) []ec2types.InstanceTypeInfo {
	var out []ec2types.InstanceTypeInfo
	p := ec2.NewDescribeInstanceTypesPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.InstanceTypes...)
	}
	return out
}

func TestDescribeInstanceTypesAllPages(t *testing.T) {
	c := start(t)
	facts := loadFacts(t)
	types := allInstanceTypes(t, c, &ec2.DescribeInstanceTypesInput{})
	if len(types) != 1363 || len(facts) != 1363 {
		t.Fatalf("got %d types, facts %d", len(types), len(facts))
	}
	if calls := c.e.Calls("ec2", "DescribeInstanceTypes"); calls != 14 {
		t.Fatalf("1,363 types at 100 per page take 14 calls, took %d", calls)
	}
	seen := map[string]bool{}
	for _, it := range types {
		name := string(it.InstanceType)
		if seen[name] {
			t.Fatalf("%s served twice", name)
		}
		seen[name] = true
		f, ok := facts[name]
		if !ok {
			t.Fatalf("%s is not in the facts file", name)
		}
		l := f.Labels
		arch := "x86_64"
		if l["kubernetes.io/arch"] == "arm64" {
			arch = "arm64"
		}
		hasArch := false
		for _, a := range it.ProcessorInfo.SupportedArchitectures {
			hasArch = hasArch || string(a) == arch
		}
		checks := []struct {
			what      string
			got, want string
		}{
			{"vcpu", strconv.Itoa(int(*it.VCpuInfo.DefaultVCpus)), l["karpenter.k8s.aws/instance-cpu"]},
			{"memory", strconv.FormatInt(*it.MemoryInfo.SizeInMiB, 10), l["karpenter.k8s.aws/instance-memory"]},
			{"arch", strconv.FormatBool(hasArch), "true"},
			{"hypervisor", string(it.Hypervisor), l["karpenter.k8s.aws/instance-hypervisor"]},
			{"encryption in transit", strconv.FormatBool(*it.NetworkInfo.EncryptionInTransitSupported), l["karpenter.k8s.aws/instance-encryption-in-transit-supported"]},
			{"virtualization", string(it.SupportedVirtualizationTypes[0]), "hvm"},
			{"usage classes", strings.Join([]string{string(it.SupportedUsageClasses[0]), string(it.SupportedUsageClasses[1])}, ","), "on-demand,spot"},
			{"cpu manufacturer", strings.ToLower(aws.ToString(it.ProcessorInfo.Manufacturer)), l["karpenter.k8s.aws/instance-cpu-manufacturer"]},
		}
		if nvme := l["karpenter.k8s.aws/instance-local-nvme"]; nvme != "" {
			checks = append(checks, struct{ what, got, want string }{"local nvme", strconv.FormatInt(*it.InstanceStorageInfo.TotalSizeInGB, 10), nvme},
				struct{ what, got, want string }{"nvme support", string(it.InstanceStorageInfo.NvmeSupport), "required"})
		} else if it.InstanceStorageInfo != nil {
			t.Fatalf("%s has instance storage but no local-nvme label", name)
		}
		if bw := l["karpenter.k8s.aws/instance-ebs-bandwidth"]; bw != "" {
			checks = append(checks, struct{ what, got, want string }{"ebs bandwidth", strconv.Itoa(int(*it.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps)), bw})
		}
		if n := l["karpenter.k8s.aws/instance-gpu-count"]; n != "" {
			g := it.GpuInfo.Gpus[0]
			checks = append(checks,
				struct{ what, got, want string }{"gpu count", strconv.Itoa(int(*g.Count)), n},
				struct{ what, got, want string }{"gpu name", strings.ToLower(strings.ReplaceAll(*g.Name, " ", "-")), l["karpenter.k8s.aws/instance-gpu-name"]},
				struct{ what, got, want string }{"gpu manufacturer", strings.ToLower(*g.Manufacturer), l["karpenter.k8s.aws/instance-gpu-manufacturer"]},
				struct{ what, got, want string }{"gpu memory", strconv.Itoa(int(*g.MemoryInfo.SizeInMiB)), l["karpenter.k8s.aws/instance-gpu-memory"]})
		} else if it.GpuInfo != nil {
			t.Fatalf("%s has GpuInfo without GPU labels", name)
		}
		if n := l["karpenter.k8s.aws/instance-accelerator-count"]; n != "" && l["karpenter.k8s.aws/instance-accelerator-manufacturer"] == "aws" {
			d := it.NeuronInfo.NeuronDevices[0]
			checks = append(checks,
				struct{ what, got, want string }{"neuron count", strconv.Itoa(int(*d.Count)), n},
				struct{ what, got, want string }{"neuron name", strings.ToLower(*d.Name), l["karpenter.k8s.aws/instance-accelerator-name"]})
		}
		if f.VPC != nil {
			checks = append(checks,
				struct{ what, got, want string }{"max ENIs", strconv.Itoa(int(*it.NetworkInfo.MaximumNetworkInterfaces)), strconv.Itoa(f.VPC.ENIs)},
				struct{ what, got, want string }{"IPv4 per ENI", strconv.Itoa(int(*it.NetworkInfo.Ipv4AddressesPerInterface)), strconv.Itoa(f.VPC.IPv4PerENI)},
				struct{ what, got, want string }{"network cards", strconv.Itoa(len(it.NetworkInfo.NetworkCards)), strconv.Itoa(len(f.VPC.Cards))})
		}
		checks = append(checks, struct{ what, got, want string }{"efa", strconv.FormatBool(*it.NetworkInfo.EfaSupported), strconv.FormatBool(f.EFA > 0)})
		if f.EFA > 0 {
			checks = append(checks, struct{ what, got, want string }{"efa interfaces", strconv.Itoa(int(*it.NetworkInfo.EfaInfo.MaximumEfaInterfaces)), strconv.Itoa(f.EFA)})
		}
		for _, ch := range checks {
			if ch.got != ch.want {
				t.Fatalf("%s: %s = %q, facts say %q", name, ch.what, ch.got, ch.want)
			}
		}
	}
}

func TestDescribeInstanceTypesShapes(t *testing.T) {
	c := start(t)
	out, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large", "m5.metal", "t3.medium", "m6g.large", "p4d.24xlarge", "inf2.xlarge", "t2.micro"},
	})
	ok(t, err)
	got := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		got[string(it.InstanceType)] = it
	}
	if len(got) != 7 {
		t.Fatalf("asked 7 types, got %d", len(got))
	}
	m5 := got["m5.large"]
	if *m5.VCpuInfo.DefaultVCpus != 2 || *m5.MemoryInfo.SizeInMiB != 8192 || m5.Hypervisor != ec2types.InstanceTypeHypervisorNitro ||
		*m5.BareMetal || *m5.BurstablePerformanceSupported || *m5.NetworkInfo.MaximumNetworkInterfaces != 3 ||
		*m5.NetworkInfo.Ipv4AddressesPerInterface != 10 || *m5.NetworkInfo.DefaultNetworkCardIndex != 0 {
		t.Fatalf("m5.large: %+v", m5)
	}
	if metal := got["m5.metal"]; !*metal.BareMetal || metal.Hypervisor != "" {
		t.Fatalf("m5.metal is bare metal without hypervisor: %+v", metal)
	}
	if !*got["t3.medium"].BurstablePerformanceSupported {
		t.Fatal("t3.medium is burstable")
	}
	if g := got["m6g.large"]; g.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeArm64 || *g.ProcessorInfo.Manufacturer != "AWS" {
		t.Fatalf("m6g.large: %+v", g.ProcessorInfo)
	}
	p4d := got["p4d.24xlarge"]
	if *p4d.GpuInfo.Gpus[0].Count != 8 || *p4d.GpuInfo.Gpus[0].Name != "A100" || *p4d.GpuInfo.TotalGpuMemoryInMiB != 8*40960 ||
		len(p4d.NetworkInfo.NetworkCards) != 4 || *p4d.NetworkInfo.MaximumNetworkCards != 4 || *p4d.NetworkInfo.EfaInfo.MaximumEfaInterfaces != 4 {
		t.Fatalf("p4d.24xlarge: %+v %+v", p4d.GpuInfo, p4d.NetworkInfo)
	}
	if inf := got["inf2.xlarge"]; *inf.NeuronInfo.NeuronDevices[0].Name != "Inferentia2" || *inf.NeuronInfo.NeuronDevices[0].Count != 1 {
		t.Fatalf("inf2.xlarge: %+v", inf.NeuronInfo)
	}
	if archs := got["t2.micro"].ProcessorInfo.SupportedArchitectures; len(archs) != 2 || archs[0] != ec2types.ArchitectureTypeI386 {
		t.Fatalf("t2.micro also runs i386: %v", archs)
	}
}

func TestDescribeInstanceTypesFilters(t *testing.T) {
	c := start(t)
	// Karpenter's own query.
	karpenter := allInstanceTypes(t, c, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		filter("supported-virtualization-type", "hvm"), filter("processor-info.supported-architecture", "x86_64", "arm64"),
	}})
	if len(karpenter) != 1363 {
		t.Fatalf("hvm x86_64|arm64: %d types", len(karpenter))
	}
	arm := allInstanceTypes(t, c, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter("processor-info.supported-architecture", "arm64")}})
	if len(arm) != 396 {
		t.Fatalf("arm64 types: %d", len(arm))
	}
	m5 := allInstanceTypes(t, c, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{filter("instance-type", "m5.*")}})
	for _, it := range m5 {
		if !strings.HasPrefix(string(it.InstanceType), "m5.") {
			t.Fatalf("m5.* matched %s", it.InstanceType)
		}
	}
	if len(m5) != 9 { // large .. 24xlarge and metal
		t.Fatalf("m5.* types: %d", len(m5))
	}
	_, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
	expectError(t, err, "InvalidInstanceType", 400)
	_, err = c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(200)})
	expectError(t, err, "InvalidParameterValue", 400)
	_, err = c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{NextToken: aws.String("garbage")})
	expectError(t, err, "InvalidPaginationToken", 400)
	small, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(5)})
	ok(t, err)
	if len(small.InstanceTypes) != 5 || small.NextToken == nil {
		t.Fatalf("MaxResults 5: %d types, token %v", len(small.InstanceTypes), small.NextToken)
	}
}

func allOfferings(t *testing.T, c *clients, in *ec2.DescribeInstanceTypeOfferingsInput) []ec2types.InstanceTypeOffering {
	var out []ec2types.InstanceTypeOffering
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		out = append(out, page.InstanceTypeOfferings...)
	}
	return out
}

var commonTypes = []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "r5.large", "t3.medium", "t3.large", "m6g.large", "c6g.large", "m7i.large", "m7g.large"}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	c := start(t)
	zonal := allOfferings(t, c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	byType := map[string]map[string]bool{}
	for _, o := range zonal {
		if o.LocationType != ec2types.LocationTypeAvailabilityZone {
			t.Fatalf("location type %s", o.LocationType)
		}
		if byType[string(o.InstanceType)] == nil {
			byType[string(o.InstanceType)] = map[string]bool{}
		}
		byType[string(o.InstanceType)][*o.Location] = true
	}
	if len(byType) != 1363 {
		t.Fatalf("every type must be offered somewhere: %d", len(byType))
	}
	share := float64(len(zonal)) / float64(1363*4)
	if share < 0.80 || share > 0.90 {
		t.Fatalf("about 85%% of (type, zone) pairs should be offered, got %.3f", share)
	}
	for _, ct := range commonTypes {
		if len(byType[ct]) != 4 {
			t.Fatalf("%s must be offered in every zone: %v", ct, byType[ct])
		}
	}
	if c.e.Calls("ec2", "DescribeInstanceTypeOfferings") != (len(zonal)+999)/1000 {
		t.Fatalf("%d offerings in %d calls", len(zonal), c.e.Calls("ec2", "DescribeInstanceTypeOfferings"))
	}

	regional := allOfferings(t, c, &ec2.DescribeInstanceTypeOfferingsInput{})
	if len(regional) != 1363 || *regional[0].Location != "us-west-2" {
		t.Fatalf("region offerings: %d", len(regional))
	}
	byZoneID := allOfferings(t, c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZoneId,
		Filters: []ec2types.Filter{filter("instance-type", "m5.large"), filter("location", "usw2-az1", "usw2-az2")}})
	if len(byZoneID) != 2 {
		t.Fatalf("zone-id offerings of m5.large in two zones: %d", len(byZoneID))
	}
	_, err := c.ec2.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: "galaxy"})
	expectError(t, err, "InvalidParameterValue", 400)
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	c := start(t)
	facts := loadFacts(t)
	zonal := allOfferings(t, c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	offered := map[string]bool{}
	priced := 0
	for _, o := range zonal {
		offered[string(o.InstanceType)+"/"+*o.Location] = true
		if facts[string(o.InstanceType)].OnDemandUSD > 0 {
			priced++
		}
	}
	var entries []ec2types.SpotPrice
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c.ec2, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		entries = append(entries, page.SpotPriceHistory...)
	}
	if len(entries) != 2*priced {
		t.Fatalf("want one entry per priced offering and product (%d), got %d", 2*priced, len(entries))
	}
	for _, e := range entries {
		key := string(e.InstanceType) + "/" + *e.AvailabilityZone
		if !offered[key] {
			t.Fatalf("spot price for an offering that does not exist: %s", key)
		}
		price, err := strconv.ParseFloat(*e.SpotPrice, 64)
		ok(t, err)
		od := facts[string(e.InstanceType)].OnDemandUSD
		if price < math.Floor(od*0.30*10000)/10000 || price > math.Ceil(od*0.70*10000)/10000 || e.Timestamp == nil || *e.AvailabilityZoneId == "" {
			t.Fatalf("%s: spot %v for on-demand %v", key, price, od)
		}
	}
	one, err := c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"},
		Filters: []ec2types.Filter{filter("availability-zone", "us-west-2a")}})
	ok(t, err)
	if len(one.SpotPriceHistory) != 1 {
		t.Fatalf("m5.large in us-west-2a: %d entries", len(one.SpotPriceHistory))
	}
	again, err := c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"}, AvailabilityZone: aws.String("us-west-2a")})
	ok(t, err)
	if *again.SpotPriceHistory[0].SpotPrice != *one.SpotPriceHistory[0].SpotPrice {
		t.Fatal("spot prices must be deterministic")
	}
}
