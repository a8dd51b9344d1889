package awsemulator_test

import (
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Price answers what DescribeSpotPriceHistory and the price list say, so the demo's
// $/h is the bill the emulator would send.
func TestPriceMatchesTheAPIs(t *testing.T) {
	c := start(t)
	out, err := c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"}})
	ok(t, err)
	if len(out.SpotPriceHistory) == 0 {
		t.Fatal("no spot prices for m5.large")
	}
	for _, sp := range out.SpotPriceHistory {
		want, _ := strconv.ParseFloat(*sp.SpotPrice, 64)
		if got, found := c.e.Price("m5.large", *sp.AvailabilityZone, "spot"); !found || got != want {
			t.Errorf("spot m5.large in %s: Price %v (%v), API %v", *sp.AvailabilityZone, got, found, want)
		}
	}
	if got, found := c.e.Price("m5.large", "us-west-2a", "on-demand"); !found || got != 0.096 {
		t.Errorf("on-demand m5.large: %v (%v), want 0.096", got, found)
	}
	if _, found := c.e.Price("no.such", "us-west-2a", "on-demand"); found {
		t.Error("a price for an unknown type")
	}
	if ep := c.e.Cluster().Endpoint; ep == "" {
		t.Error("Cluster() has no endpoint")
	}
}
