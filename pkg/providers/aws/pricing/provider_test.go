package pricing_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
)

func newProvider(t *testing.T, opts awsemulator.Options, isolated bool) (*awsemulator.Emulator, *pricing.Provider, *clocktesting.FakeClock) {
	t.Helper()
	em := awsemulator.StartForTest(t, opts)
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	return em, pricing.NewProvider(ec2.NewFromConfig(cfg), pricing.NewPricingClient(cfg), cfg.Region, isolated, clk), clk
}

// On-demand prices come from GetProducts, paginated, for the region.
func TestOnDemandFromThePricingAPI(t *testing.T) {
	em, p, _ := newProvider(t, awsemulator.Options{}, false)
	seq := p.SeqNum()
	if err := p.UpdateOnDemandPricing(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pages := em.Calls("pricing", "GetProducts"); pages < 14 {
		t.Fatalf("GetProducts answered %d requests, want the ~1,345 products in pages of 100", pages)
	}
	for name, want := range map[string]float64{"m5.large": 0.096, "p4d.24xlarge": 21.957642, "t3.micro": 0.0104, "m5.metal": 4.608} {
		if got, ok := p.OnDemandPrice(name); !ok || got != want {
			t.Errorf("on-demand price of %s = %v, %t; want %v", name, got, ok, want)
		}
	}
	if n := p.InstanceTypes(); n < 1300 {
		t.Errorf("%d on-demand prices, want ~1,345", n)
	}
	if p.SeqNum() != seq {
		t.Error("prices equal to the static table changed the sequence number")
	}
	// The list also prices Dedicated Instances (m5.large at a premium); as
	// upstream, those are not read: a dedicated launch is priced as a shared
	// one, and bare-metal types come from their own product family.
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.096 {
		t.Errorf("m5.large priced %v, want the shared 0.096", got)
	}
}

// The Pricing API is reached through its own endpoint region (eu-central-1
// for eu-* regions), which the request is signed for.
func TestPricingEndpointRegion(t *testing.T) {
	em, p, _ := newProvider(t, awsemulator.Options{Region: "eu-west-1"}, false)
	if err := p.UpdateOnDemandPricing(context.Background()); err != nil {
		t.Fatalf("GetProducts signed for %s: %v", pricing.EndpointRegion("eu-west-1"), err)
	}
	if got, ok := p.OnDemandPrice("m5.large"); !ok || got != 0.096 {
		t.Fatalf("on-demand price = %v, %t", got, ok)
	}
	if em.Calls("pricing", "GetProducts") == 0 {
		t.Fatal("no GetProducts call")
	}
}

// Spot prices are per zone, below on-demand, and replace the initial
// on-demand stand-in once fetched.
func TestSpotFromPriceHistory(t *testing.T) {
	em, p, _ := newProvider(t, awsemulator.Options{}, false)
	ctx := context.Background()
	before := p.SeqNum()
	if err := p.UpdateSpotPricing(ctx); err != nil {
		t.Fatal(err)
	}
	if p.SeqNum() == before {
		t.Fatal("fetching spot prices did not change the sequence number")
	}
	od, _ := p.OnDemandPrice("m5.large")
	zones := em.Options().Zones
	for _, z := range zones {
		spot, ok := p.SpotPrice("m5.large", z)
		if !ok || spot < 0.3*od || spot > 0.7*od {
			t.Errorf("spot price of m5.large in %s = %v, %t; want 30-70%% of %v", z, spot, ok, od)
		}
	}
	// The price is the one EC2 reports for the zone.
	out, err := ec2.NewFromConfig(em.AWSConfig()).DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String(zones[0]),
		ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(time.Now()),
	})
	if err != nil || len(out.SpotPriceHistory) == 0 {
		t.Fatalf("DescribeSpotPriceHistory: %v, %d entries", err, len(out.SpotPriceHistory))
	}
	spot, _ := p.SpotPrice("m5.large", zones[0])
	if want, err := strconv.ParseFloat(aws.ToString(out.SpotPriceHistory[0].SpotPrice), 64); err != nil || spot != want {
		t.Errorf("spot price %v, EC2 says %s", spot, aws.ToString(out.SpotPriceHistory[0].SpotPrice))
	}
	if _, ok := p.SpotPrice("m5.large", "us-west-2z"); ok {
		t.Error("a zone without spot history has a spot price")
	}
	// A second identical fetch changes nothing.
	seq := p.SeqNum()
	if err := p.UpdateSpotPricing(ctx); err != nil || p.SeqNum() != seq {
		t.Fatalf("an unchanged refresh: %v, seq %d -> %d", err, seq, p.SeqNum())
	}
}

// When the Pricing API fails, the static prices stay and the error says why.
func TestStaticFallbackWhenPricingFaults(t *testing.T) {
	em, p, _ := newProvider(t, awsemulator.Options{}, false)
	em.InjectFault(awsemulator.Fault{Service: "pricing", Action: "GetProducts", Code: "InternalError"})
	err := p.UpdateOnDemandPricing(context.Background())
	if err == nil || !strings.Contains(err.Error(), "InternalError") {
		t.Fatalf("error = %v, want the Pricing API's InternalError", err)
	}
	if got, ok := p.OnDemandPrice("m5.large"); !ok || got != 0.096 {
		t.Fatalf("after a failed refresh the price of m5.large is %v, %t; want the static 0.096", got, ok)
	}
	// Throttling is retried by the SDK.
	em.ClearFaults()
	em.InjectFault(awsemulator.Fault{Service: "pricing", Action: "GetProducts", Code: "ThrottlingException", Count: 1})
	if err := p.UpdateOnDemandPricing(context.Background()); err != nil {
		t.Fatalf("one throttled request was not retried: %v", err)
	}
}

// In an isolated VPC the Pricing API is never called; prices stay static.
func TestIsolatedVPCUsesStaticPrices(t *testing.T) {
	em, p, _ := newProvider(t, awsemulator.Options{}, true)
	if err := p.UpdateOnDemandPricing(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := em.Calls("pricing", ""); n != 0 {
		t.Fatalf("%d Pricing API calls in an isolated VPC", n)
	}
	if got, ok := p.OnDemandPrice("c5.large"); !ok || got != 0.085 {
		t.Fatalf("static price of c5.large = %v, %t", got, ok)
	}
}

// The controller refreshes at start and every 12 hours on its clock.
func TestControllerRefreshesEveryTwelveHours(t *testing.T) {
	em, p, clk := newProvider(t, awsemulator.Options{}, false)
	c := pricing.NewController(p, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the first refresh", func() bool { return clk.HasWaiters() })
	first := em.Calls("ec2", "DescribeSpotPriceHistory")
	if first == 0 || em.Calls("pricing", "GetProducts") == 0 {
		t.Fatalf("the first pass did not fetch prices: %v", em.AllCalls())
	}
	clk.Step(pricing.RefreshInterval - time.Minute)
	if em.Calls("ec2", "DescribeSpotPriceHistory") != first {
		t.Fatal("refreshed before 12 hours")
	}
	clk.Step(time.Minute)
	waitFor("the second refresh", func() bool { return em.Calls("ec2", "DescribeSpotPriceHistory") > first && clk.HasWaiters() })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
