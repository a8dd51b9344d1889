package instancetype_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// fixture is a provider wired to a fresh emulator, as the operator wires it.
type fixture struct {
	em          *awsemulator.Emulator
	clock       *clocktesting.FakeClock
	prices      *pricing.Provider
	unavailable *instancetype.UnavailableOfferings
	provider    *instancetype.Provider
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ec2Client := ec2.NewFromConfig(cfg)
	f := &fixture{em: em, clock: clk}
	f.prices = pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	f.unavailable = instancetype.NewUnavailableOfferings(clk)
	f.provider = instancetype.NewProvider(ec2Client, f.prices, f.unavailable, clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075})
	return f
}

// nodeClass is an AL2023 class with a subnet in each emulator zone (ids as the
// subnet controller resolves them).
func (f *fixture) nodeClass(mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	for _, s := range f.em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
		}
	}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

func byName(its []*scheduling.InstanceType) map[string]*scheduling.InstanceType {
	out := make(map[string]*scheduling.InstanceType, len(its))
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// fact is one entry of the facts file the emulator is seeded from.
type fact struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels"`
	OnDemand *float64          `json:"onDemandUSD_us_east_1"`
}

func readFacts(t testing.TB) []fact {
	t.Helper()
	fh, err := os.Open("../../../awsemulator/data/ec2-instance-types.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var facts []fact
	if err := json.NewDecoder(zr).Decode(&facts); err != nil {
		t.Fatal(err)
	}
	return facts
}

// emulatorDeviations are labels whose EC2 shape the emulator does not render
// as AWS does yet, by family: xen types that are EBS-optimized by default
// (answered "supported", so no EBS bandwidth) and the Qualcomm accelerator
// list (items the SDK does not read). The
// label values upstream derived from AWS are in the facts file; these are
// skipped, not failed, until the emulator answers like AWS.
var emulatorDeviations = map[string][]string{
	"c4": {awsv1.LabelInstanceEBSBandwidth}, "d2": {awsv1.LabelInstanceEBSBandwidth}, "h1": {awsv1.LabelInstanceEBSBandwidth},
	"i3": {awsv1.LabelInstanceEBSBandwidth}, "m4": {awsv1.LabelInstanceEBSBandwidth}, "r4": {awsv1.LabelInstanceEBSBandwidth},
	"x1": {awsv1.LabelInstanceEBSBandwidth}, "x1e": {awsv1.LabelInstanceEBSBandwidth},
	"dl2q": {awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceAcceleratorManufacturer, awsv1.LabelInstanceAcceleratorCount},
}

func deviates(name, label string) bool {
	family, _, _ := strings.Cut(name, ".")
	for _, l := range emulatorDeviations[family] {
		if l == label {
			return true
		}
	}
	return false
}

// Discovery pages through DescribeInstanceTypes (at most 100 per page) and
// finds every type of the facts file, each labelled exactly as upstream
// labels it (the facts file holds upstream's labels of the real AWS answers).
func TestDiscoveryLabelsEveryTypeAsUpstream(t *testing.T) {
	f := newFixture(t)
	its, err := f.provider.List(context.Background(), f.nodeClass())
	if err != nil {
		t.Fatal(err)
	}
	facts := readFacts(t)
	if len(its) != len(facts) {
		t.Fatalf("listed %d instance types, the facts file has %d", len(its), len(facts))
	}
	if pages := f.em.Calls("ec2", "DescribeInstanceTypes"); pages != (len(facts)+99)/100 {
		t.Errorf("DescribeInstanceTypes answered %d requests, want %d pages of 100", pages, (len(facts)+99)/100)
	}
	got := byName(its)
	// Labels that depend on the class, region or offerings, not on the type.
	skip := map[string]bool{corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true, awsv1.LabelTopologyZoneID: true, scheduling.LabelCapacityType: true}
	mismatches, checked := 0, 0
	for _, fa := range facts {
		it := got[fa.Name]
		if it == nil {
			t.Errorf("%s: not listed", fa.Name)
			continue
		}
		labels := map[string]string{}
		for _, r := range it.Requirements.All() {
			if v, ok := r.Single(); ok && !skip[r.Key] {
				labels[r.Key] = v
			}
		}
		for k, want := range fa.Labels {
			checked++
			if have, ok := labels[k]; (!ok || have != want) && !deviates(fa.Name, k) {
				mismatches++
				if mismatches <= 20 {
					t.Errorf("%s: label %s = %q (set: %t), facts say %q", fa.Name, k, have, ok, want)
				}
			}
		}
		for k, have := range labels {
			if _, ok := fa.Labels[k]; !ok && !deviates(fa.Name, k) {
				mismatches++
				if mismatches <= 20 {
					t.Errorf("%s: label %s = %q, facts have no such label", fa.Name, k, have)
				}
			}
		}
	}
	if mismatches > 20 {
		t.Errorf("%d label mismatches in all", mismatches)
	}
	t.Logf("%d labels of %d instance types checked", checked, len(facts))
}

// The capacity math over the emulator's DescribeInstanceTypes answers gives
// the figures worked out by hand in capacity_test.go.
func TestAllocatableThroughTheSDK(t *testing.T) {
	f := newFixture(t)
	its, err := f.provider.List(context.Background(), f.nodeClass())
	if err != nil {
		t.Fatal(err)
	}
	got := byName(its)
	for name, want := range map[string]map[corev1.ResourceName]string{
		"m5.large":     {"cpu": "1930m", "memory": "6903Mi", "pods": "29", "ephemeral-storage": "17Gi", awsv1.ResourceAWSPodENI: "9"},
		"t3.micro":     {"memory": "548Mi", "pods": "4"},
		"m7g.large":    {"memory": "6844Mi", "pods": "29"},
		"m5.metal":     {"cpu": "95690m", "memory": "355262Mi", "pods": "737"},
		"g5.xlarge":    {"memory": "14162Mi", "pods": "58", awsv1.ResourceNVIDIAGPU: "1"},
		"p4d.24xlarge": {"memory": "1082712Mi", "pods": "737", awsv1.ResourceNVIDIAGPU: "8", awsv1.ResourceEFA: "4"},
		"p5.48xlarge":  {"memory": "1938410Mi", "pods": "100", awsv1.ResourceEFA: "32"},
		"g4ad.xlarge":  {"memory": "14712Mi", awsv1.ResourceAMDGPU: "1"},
		"inf2.xlarge":  {awsv1.ResourceAWSNeuron: "1", awsv1.ResourceAWSNeuronCore: "2"},
	} {
		it := got[name]
		if it == nil {
			t.Errorf("%s: not listed", name)
			continue
		}
		alloc := it.Allocatable()
		for r, w := range want {
			if q, ok := alloc[r]; !ok || q.Cmp(resource.MustParse(w)) != 0 {
				t.Errorf("%s: allocatable %s = %s, want %s", name, r, q.String(), w)
			}
		}
	}
}

// One offering per subnet zone and capacity type; a zone EC2 does not offer
// the type in is unavailable; every offering carries its zone id.
func TestOfferingsPerSubnetZone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Only the subnets of two zones.
	nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nc.Status.Subnets[:2] })
	its, err := f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{nc.Status.Subnets[0].Zone: nc.Status.Subnets[0].ZoneID, nc.Status.Subnets[1].Zone: nc.Status.Subnets[1].ZoneID}
	offered := offeredZones(t, f)
	unavailableSeen := false
	for _, it := range its {
		if len(it.Offerings) != 4 {
			t.Fatalf("%s: %d offerings, want 2 zones x 2 capacity types", it.Name, len(it.Offerings))
		}
		zoneReq, _ := it.Requirements.Get(corev1.LabelTopologyZone)
		for _, o := range it.Offerings {
			id, ok := zones[o.Zone]
			if !ok {
				t.Fatalf("%s: offering in %s, not a subnet zone", it.Name, o.Zone)
			}
			if !o.Requirements.Has(awsv1.LabelTopologyZoneID, id) || o.Requirements.Has(awsv1.LabelTopologyZoneID, "other") {
				t.Errorf("%s: offering in %s does not carry zone id %s: %s", it.Name, o.Zone, id, o.Requirements.String())
			}
			_, priced := f.prices.OnDemandPrice(it.Name)
			if o.Available != (offered[it.Name][o.Zone] && priced) {
				t.Errorf("%s in %s: available %t, EC2 offers it there: %t, priced: %t", it.Name, o.Zone, o.Available, offered[it.Name][o.Zone], priced)
			}
			if zoneReq.Has(o.Zone) != offered[it.Name][o.Zone] {
				t.Errorf("%s: zone requirement %s disagrees with EC2's offering in %s", it.Name, zoneReq.String(), o.Zone)
			}
			unavailableSeen = unavailableSeen || !o.Available
		}
	}
	if !unavailableSeen {
		t.Fatal("every type is offered in both zones: the emulator's offerings do not exercise unoffered zones")
	}
}

func offeredZones(t *testing.T, f *fixture) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	cfg := f.em.AWSConfig()
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(ec2.NewFromConfig(cfg), &ec2.DescribeInstanceTypeOfferingsInput{LocationType: "availability-zone"})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.InstanceTypeOfferings {
			if out[string(o.InstanceType)] == nil {
				out[string(o.InstanceType)] = map[string]bool{}
			}
			out[string(o.InstanceType)][*o.Location] = true
		}
	}
	return out
}

// Offerings carry the pricing provider's prices: on-demand from the Pricing
// API, spot per zone from DescribeSpotPriceHistory once fetched.
func TestOfferingsArePriced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass()
	find := func(its []*scheduling.InstanceType, name, zone, ct string) scheduling.Offering {
		for _, o := range byName(its)[name].Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o
			}
		}
		t.Fatalf("%s has no %s offering in %s", name, ct, zone)
		return scheduling.Offering{}
	}
	zone := nc.Status.Subnets[0].Zone
	its, err := f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if o := find(its, "m5.large", zone, "spot"); o.Price != 0.096 {
		t.Fatalf("spot price before spot prices are fetched = %v, want the on-demand 0.096", o.Price)
	}
	if err := f.prices.UpdateSpotPricing(ctx); err != nil {
		t.Fatal(err)
	}
	spot, ok := f.prices.SpotPrice("m5.large", zone)
	if !ok || spot >= 0.096 {
		t.Fatalf("fetched spot price = %v, %t; want one below on-demand", spot, ok)
	}
	its, err = f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if o := find(its, "m5.large", zone, "spot"); o.Price != spot {
		t.Fatalf("offering price %v after the spot refresh, want %v", o.Price, spot)
	}
	if o := find(its, "m5.large", zone, "on-demand"); o.Price != 0.096 || !o.Available {
		t.Fatalf("on-demand offering = %+v, want 0.096 and available", o)
	}
}

// An offering marked unavailable (ICE) is unavailable until the TTL passes.
func TestUnavailableOfferingsAreNotAvailable(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass()
	zone := nc.Status.Subnets[0].Zone
	available := func() bool {
		its, err := f.provider.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range byName(its)["m5.large"].Offerings {
			if o.Zone == zone && o.CapacityType == "spot" {
				return o.Available
			}
		}
		t.Fatal("no spot offering of m5.large")
		return false
	}
	if !available() {
		t.Fatal("m5.large spot unavailable before any ICE")
	}
	f.unavailable.MarkUnavailable("spot", "m5.large", zone)
	if available() {
		t.Fatal("m5.large spot still available after it was marked unavailable")
	}
	f.clock.Step(instancetype.UnavailableOfferingsTTL)
	if !available() {
		t.Fatal("m5.large spot still unavailable after the TTL")
	}
}

// Resolved types are cached for 5 minutes: repeated calls make no EC2 calls, a
// change of the class's kubelet/BDM/family recomputes without EC2 calls, and
// after the TTL the types and offerings are described again.
func TestCaching(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass()
	first, err := f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.em.Calls("ec2", "")
	again, err := f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if f.em.Calls("ec2", "") != calls {
		t.Fatalf("a second List called EC2 (%d -> %d calls)", calls, f.em.Calls("ec2", ""))
	}
	if byName(first)["m5.large"] != byName(again)["m5.large"] {
		t.Fatal("a second List recomputed the instance types")
	}

	pods := func(nc *awsv1.EC2NodeClass) string {
		its, err := f.provider.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		q := byName(its)["m5.large"].Capacity[corev1.ResourcePods]
		return q.String()
	}
	withMaxPods := f.nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr[int32](42)} })
	withBDM := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		size := resource.MustParse("200Gi")
		nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: &size}}}
	})
	windows := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	})
	if got := pods(withMaxPods); got != "42" {
		t.Fatalf("maxPods 42 gives %s pods", got)
	}
	if got := pods(windows); got != "110" {
		t.Fatalf("Windows gives %s pods, want 110", got)
	}
	its, err := f.provider.List(ctx, withBDM)
	if err != nil {
		t.Fatal(err)
	}
	if q := byName(its)["m5.large"].Capacity[corev1.ResourceEphemeralStorage]; q.Cmp(resource.MustParse("200Gi")) != 0 {
		t.Fatalf("root volume 200Gi gives ephemeral-storage %s", q.String())
	}
	if got := pods(nc); got != "29" {
		t.Fatalf("the original class now gives %s pods, want 29", got)
	}
	if f.em.Calls("ec2", "") != calls {
		t.Fatal("resolving other classes called EC2")
	}

	f.clock.Step(instancetype.CacheTTL)
	if _, err := f.provider.List(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if f.em.Calls("ec2", "DescribeInstanceTypes") <= 14 || f.em.Calls("ec2", "DescribeInstanceTypeOfferings") <= 1 {
		t.Fatalf("EC2 was not asked again after the TTL: %v", f.em.AllCalls())
	}
}

// Throttled requests are retried by the SDK; a refresh that keeps failing
// keeps the known types, and with none known the error says what failed.
func TestThrottlingAndRetries(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass()
	if _, err := f.provider.List(ctx, nc); err != nil {
		t.Fatal(err)
	}
	pages := f.em.Calls("ec2", "DescribeInstanceTypes")
	cfg := f.em.AWSConfig()
	fresh := func() *instancetype.Provider {
		return instancetype.NewProvider(ec2.NewFromConfig(cfg), f.prices, f.unavailable, f.clock, instancetype.Options{Region: "us-west-2"})
	}

	f.em.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstanceTypes", Code: "RequestLimitExceeded", Count: 2})
	throttled := fresh()
	its, err := throttled.List(ctx, nc)
	if err != nil {
		t.Fatalf("two throttled pages were not retried: %v", err)
	}
	if len(its) == 0 {
		t.Fatal("no instance types")
	}
	// At least: the SDK also retries responses it lost to a connection it
	// closed itself (aws-sdk-go-v2 closing the request body early, see the
	// package's test notes), so exact counts vary.
	if got := f.em.Calls("ec2", "DescribeInstanceTypes") - pages; got < (len(its)+99)/100+2 {
		t.Fatalf("DescribeInstanceTypes answered %d requests, want at least %d pages + 2 retries", got, (len(its)+99)/100)
	}

	// Unlimited failures after the TTL: the known types stay.
	f.em.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstanceTypes", Code: "InternalError"})
	f.clock.Step(instancetype.CacheTTL)
	stale, err := throttled.List(ctx, nc)
	if err != nil || len(stale) != len(its) {
		t.Fatalf("a failing refresh lost the known types: %d types, %v", len(stale), err)
	}

	// A provider that never described the types reports the failure.
	if _, err := fresh().List(ctx, nc); err == nil || !strings.Contains(err.Error(), "describing instance types") || !strings.Contains(err.Error(), "InternalError") {
		t.Fatalf("error = %v, want it to name DescribeInstanceTypes and InternalError", err)
	}
}

// A class without resolved subnets, or with a bad kubelet block, is an error
// naming the field; nothing is described.
func TestBadNodeClass(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.provider.List(ctx, f.nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nil })); err == nil || !strings.Contains(err.Error(), "status.subnets") {
		t.Fatalf("no subnets: error %v, want one naming status.subnets", err)
	}
	bad := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"gpu": "1"}}
	})
	if _, err := f.provider.List(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.kubelet.kubeReserved.gpu") {
		t.Fatalf("bad kubeReserved: error %v, want one naming spec.kubelet.kubeReserved.gpu", err)
	}
	if n := f.em.Calls("ec2", ""); n != 0 {
		t.Fatalf("bad classes made %d EC2 calls", n)
	}
}

func ptr[T any](v T) *T { return &v }

// enclaveOptions.enabled and cpuOptions.nestedVirtualization enabled keep
// only the instance types DescribeInstanceTypes reports supporting them;
// their disabled forms keep every type.
func TestEnclavesAndNestedVirtualizationNarrowTheTypes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if !f.em.SetInstanceTypeFeatures("m5.xlarge", true) || !f.em.SetInstanceTypeFeatures("c5.2xlarge", true, "nested-virtualization") ||
		!f.em.SetInstanceTypeFeatures("m5.large", false, "nested-virtualization") {
		t.Fatal("unknown instance types")
	}
	names := func(nc *awsv1.EC2NodeClass) []string {
		its, err := f.provider.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range its {
			out = append(out, it.Name)
		}
		return out
	}
	all := len(names(f.nodeClass()))
	enclaves := f.nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true} })
	if got := names(enclaves); !reflect.DeepEqual(got, []string{"c5.2xlarge", "m5.xlarge"}) {
		t.Errorf("enclaves: %v", got)
	}
	nested := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr("enabled")}
	})
	if got := names(nested); !reflect.DeepEqual(got, []string{"c5.2xlarge", "m5.large"}) {
		t.Errorf("nested virtualization: %v", got)
	}
	both := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true}
		nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr("enabled")}
	})
	if got := names(both); !reflect.DeepEqual(got, []string{"c5.2xlarge"}) {
		t.Errorf("both: %v", got)
	}
	off := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: false}
		nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr("disabled")}
	})
	if got := len(names(off)); got != all {
		t.Errorf("disabled: %d types, want all %d", got, all)
	}
}
