package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"
)

// EndpointRegion is the region whose Pricing API endpoint serves prices for
// region: the API only runs in a few regions.
func EndpointRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	default:
		return "us-east-1"
	}
}

// NewPricingClient is a Pricing API client for cfg's region: cfg with the
// region replaced by EndpointRegion (endpoint overrides in cfg still apply).
func NewPricingClient(cfg aws.Config) *awspricing.Client {
	return awspricing.NewFromConfig(cfg, func(o *awspricing.Options) { o.Region = EndpointRegion(cfg.Region) })
}

// Provider holds the current prices. It is safe for concurrent use.
type Provider struct {
	ec2         *ec2.Client
	pricing     *awspricing.Client
	region      string
	isolatedVPC bool
	clock       clock.Clock

	mu       sync.RWMutex
	onDemand map[string]float64
	// spot prices by instance type, then zone.
	spot map[string]map[string]float64
	// spotFetched is false until spot prices came from EC2; before, every
	// zone's spot price is the on-demand price.
	spotFetched bool
	seq         atomic.Uint64
}

// NewProvider returns a provider primed with the static prices. isolatedVPC
// (ISOLATED_VPC) says the Pricing API is unreachable, so on-demand prices stay
// static; spot prices still come from EC2.
func NewProvider(ec2Client *ec2.Client, pricingClient *awspricing.Client, region string, isolatedVPC bool, clk clock.Clock) *Provider {
	p := &Provider{ec2: ec2Client, pricing: pricingClient, region: region, isolatedVPC: isolatedVPC, clock: clk}
	p.onDemand = maps.Clone(staticOnDemandPrices)
	return p
}

// OnDemandPrice is the hourly on-demand price of the type in USD, and whether
// it is known.
func (p *Provider) OnDemandPrice(instanceType string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	price, ok := p.onDemand[instanceType]
	return price, ok
}

// SpotPrice is the current spot price of the type in the zone, and whether it
// is known. Before spot prices were fetched it is the on-demand price.
func (p *Provider) SpotPrice(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.spotFetched {
		price, ok := p.onDemand[instanceType]
		return price, ok
	}
	price, ok := p.spot[instanceType][zone]
	return price, ok
}

// SeqNum changes whenever a price changes, so callers can cache what they
// derive from prices.
func (p *Provider) SeqNum() uint64 { return p.seq.Load() }

// InstanceTypes is the number of types with an on-demand price (for logs and tests).
func (p *Provider) InstanceTypes() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.onDemand)
}

// LivePricing reports whether on-demand prices are fetched from the Pricing
// API at all (not in an isolated VPC or GovCloud).
func (p *Provider) LivePricing() bool {
	return !p.isolatedVPC && !strings.HasPrefix(p.region, "us-gov-")
}

// UpdateOnDemandPricing fetches the region's Linux on-demand prices of shared
// and bare-metal instances. On failure the known prices stay.
func (p *Provider) UpdateOnDemandPricing(ctx context.Context) error {
	if !p.LivePricing() {
		return nil
	}
	shared, sharedErr := p.fetchOnDemand(ctx,
		pricingtypes.Filter{Field: aws.String("tenancy"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("Shared")},
		pricingtypes.Filter{Field: aws.String("productFamily"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("Compute Instance")})
	metal, metalErr := p.fetchOnDemand(ctx,
		pricingtypes.Filter{Field: aws.String("tenancy"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("Dedicated")},
		pricingtypes.Filter{Field: aws.String("productFamily"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("Compute Instance (bare metal)")})
	if err := errors.Join(sharedErr, metalErr); err != nil {
		return fmt.Errorf("fetching on-demand prices for %s: %w", p.region, err)
	}
	prices := shared
	for name, price := range metal {
		prices[name] = price
	}
	if len(prices) == 0 {
		return fmt.Errorf("fetching on-demand prices for %s: the Pricing API returned no prices", p.region)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !maps.Equal(p.onDemand, prices) {
		p.onDemand = prices
		p.seq.Add(1)
	}
	return nil
}

func (p *Provider) fetchOnDemand(ctx context.Context, extra ...pricingtypes.Filter) (map[string]float64, error) {
	filters := append([]pricingtypes.Filter{
		termMatch("regionCode", p.region),
		termMatch("serviceCode", "AmazonEC2"),
		termMatch("preInstalledSw", "NA"),
		termMatch("operatingSystem", "Linux"),
		termMatch("capacitystatus", "Used"),
		termMatch("marketoption", "OnDemand"),
	}, extra...)
	prices := map[string]float64{}
	pages := awspricing.NewGetProductsPaginator(p.pricing, &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters:     filters,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, doc := range page.PriceList {
			name, price, err := parsePriceList(doc)
			if err != nil {
				return nil, err
			}
			if name != "" && price > 0 {
				prices[name] = price
			}
		}
	}
	return prices, nil
}

func termMatch(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
}

// priceListItem is the part of a price-list document (one product with its
// terms) that holds the instance type and its on-demand hourly price.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceList returns the instance type and its USD price from one
// document; a product without a non-zero USD price gives 0.
func parsePriceList(doc string) (string, float64, error) {
	var item priceListItem
	if err := json.Unmarshal([]byte(doc), &item); err != nil {
		return "", 0, fmt.Errorf("parsing a price list document: %w", err)
	}
	for _, term := range item.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("parsing the price of %s: %q: %w", item.Product.Attributes.InstanceType, usd, err)
			}
			if price > 0 {
				return item.Product.Attributes.InstanceType, price, nil
			}
		}
	}
	return item.Product.Attributes.InstanceType, 0, nil
}

// UpdateSpotPricing fetches the current Linux spot price of every type in
// every zone. On failure the known prices stay.
func (p *Provider) UpdateSpotPricing(ctx context.Context) error {
	type latest struct {
		price float64
		at    time.Time
	}
	seen := map[string]map[string]latest{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		// A start time of now asks for the price in force now.
		StartTime: aws.Time(p.clock.Now()),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("fetching spot prices: %w", err)
		}
		for _, h := range page.SpotPriceHistory {
			if h.SpotPrice == nil || h.AvailabilityZone == nil || h.Timestamp == nil {
				continue
			}
			price, err := strconv.ParseFloat(*h.SpotPrice, 64)
			if err != nil {
				continue
			}
			name := string(h.InstanceType)
			if seen[name] == nil {
				seen[name] = map[string]latest{}
			}
			if have, ok := seen[name][*h.AvailabilityZone]; ok && have.at.After(*h.Timestamp) {
				continue
			}
			seen[name][*h.AvailabilityZone] = latest{price: price, at: *h.Timestamp}
		}
	}
	if len(seen) == 0 {
		return errors.New("fetching spot prices: DescribeSpotPriceHistory returned no prices")
	}
	prices := make(map[string]map[string]float64, len(seen))
	for name, zones := range seen {
		prices[name] = make(map[string]float64, len(zones))
		for zone, l := range zones {
			prices[name][zone] = l.price
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.spotFetched || !maps.EqualFunc(p.spot, prices, maps.Equal) {
		p.spot, p.spotFetched = prices, true
		p.seq.Add(1)
	}
	return nil
}
