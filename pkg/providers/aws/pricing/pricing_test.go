package pricing

import (
	"testing"
)

func TestEndpointRegion(t *testing.T) {
	for region, want := range map[string]string{
		"us-west-2":      "us-east-1",
		"us-east-1":      "us-east-1",
		"ap-northeast-1": "ap-south-1",
		"ap-south-1":     "ap-south-1",
		"eu-west-1":      "eu-central-1",
		"cn-north-1":     "cn-northwest-1",
		"sa-east-1":      "us-east-1",
		"us-gov-west-1":  "us-east-1",
	} {
		if got := EndpointRegion(region); got != want {
			t.Errorf("EndpointRegion(%s) = %s, want %s", region, got, want)
		}
	}
}

func TestParsePriceList(t *testing.T) {
	doc := `{"product":{"productFamily":"Compute Instance","attributes":{"instanceType":"m5.large","regionCode":"us-west-2"},"sku":"ABC"},
	"serviceCode":"AmazonEC2",
	"terms":{"OnDemand":{"ABC.JRTCKXETXF":{"priceDimensions":{"ABC.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":"0.0960000000"}}}}}}}`
	name, price, err := parsePriceList(doc)
	if err != nil || name != "m5.large" || price != 0.096 {
		t.Fatalf("parsePriceList = %q, %v, %v; want m5.large, 0.096", name, price, err)
	}
	if _, _, err := parsePriceList(`{"product":`); err == nil {
		t.Fatal("a truncated document parsed")
	}
	_, price, err = parsePriceList(`{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"x":{"priceDimensions":{"y":{"pricePerUnit":{"USD":"0.0000000000"}}}}}}}`)
	if err != nil || price != 0 {
		t.Fatalf("zero price = %v, %v; want 0 and no error", price, err)
	}
}

func TestStaticPricesBeforeRefresh(t *testing.T) {
	p := NewProvider(nil, nil, "us-west-2", false, nil)
	od, ok := p.OnDemandPrice("m5.large")
	if !ok || od != 0.096 {
		t.Fatalf("static on-demand price of m5.large = %v, %v; want 0.096 (facts file)", od, ok)
	}
	// Until spot prices are fetched, spot costs what on-demand does, in any zone.
	if spot, ok := p.SpotPrice("m5.large", "us-west-2c"); !ok || spot != od {
		t.Fatalf("initial spot price = %v, %v; want the on-demand price %v", spot, ok, od)
	}
	if _, ok := p.OnDemandPrice("no-such.type"); ok {
		t.Fatal("an unknown type has a price")
	}
	if n := p.InstanceTypes(); n < 1300 {
		t.Fatalf("static table has %d prices, want the facts file's ~1,345", n)
	}
}
