package subnet

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/filters"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// Subnet is one resolved subnet.
type Subnet struct {
	ID           string
	Zone         string
	ZoneID       string
	VPCID        string
	AvailableIPs int32
	Tags         map[string]string
}

// Resolution is what a list of terms resolved to.
type Resolution struct {
	// Subnets matched by any term, each once, most free IPs first, then by id.
	Subnets []Subnet
	// Unmatched are the indices of the terms that matched no subnet.
	Unmatched []int
	terms     []v1.SubnetSelectorTerm
}

// UnmatchedMessage names every term that matched nothing, e.g.
// `subnetSelectorTerms[1] matched no subnet: tags {"Name":"missing"}`; "" when
// every term matched.
func (r *Resolution) UnmatchedMessage() string {
	return filters.Unmatched("subnetSelectorTerms", "subnet", r.Unmatched, func(i int) string { return DescribeTerm(r.terms[i]) })
}

// DescribeTerm renders a term for messages.
func DescribeTerm(t v1.SubnetSelectorTerm) string {
	return filters.Term{}.Field("id", t.ID).Tags(t.Tags).String()
}

// Provider resolves subnet selector terms.
type Provider struct {
	ec2      *ec2.Client
	cache    *ttlcache.Cache[[]Subnet]
	pageSize int32

	mu sync.Mutex
	// inflight counts IP addresses claimed by launches since the subnet's
	// free-address count was last read from EC2.
	inflight map[string]int32
	// exhausted are subnets a launch found without a free address
	// (InsufficientFreeAddressesInSubnet) since their count was last read
	// from EC2: they count as having none, so launches prefer the zone's
	// other subnets (upstream's UpdateICEdSubnet).
	exhausted map[string]bool
}

// Option adjusts a Provider.
type Option func(*Provider)

// WithPageSize sets DescribeSubnets MaxResults (5..1000; default 1000).
func WithPageSize(n int32) Option { return func(p *Provider) { p.pageSize = n } }

// NewProvider returns a provider whose answers live for ttl (upstream: the
// subnet refresh interval, 1 minute).
func NewProvider(ec2api *ec2.Client, clk clock.PassiveClock, ttl time.Duration, opts ...Option) *Provider {
	p := &Provider{ec2: ec2api, cache: ttlcache.New[[]Subnet](clk, ttl), pageSize: 1000, inflight: map[string]int32{}, exhausted: map[string]bool{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// queries groups id terms into one request and gives every tag term its own.
func queries(terms []v1.SubnetSelectorTerm) []filters.Query {
	var out []filters.Query
	var ids []string
	var idTerms []int
	for i, t := range terms {
		if t.ID != "" {
			ids = append(ids, t.ID)
			idTerms = append(idTerms, i)
			continue
		}
		if len(t.Tags) == 0 {
			continue // the CRD rejects such a term; it selects nothing
		}
		out = append(out, filters.Query{Filters: filters.Tags(t.Tags), Terms: []int{i}})
	}
	if len(ids) > 0 {
		sort.Strings(ids)
		out = append(out, filters.Query{Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: filters.Uniq(ids)}}, Terms: idTerms})
	}
	return out
}

// List resolves terms. An error means EC2 could not be asked (after the SDK's
// retries); terms that match nothing are not an error but are reported in
// the Resolution.
func (p *Provider) List(ctx context.Context, terms []v1.SubnetSelectorTerm) (*Resolution, error) {
	all, unmatched, err := filters.Resolve(queries(terms), len(terms), "subnets", "subnetSelectorTerms",
		func(fs []ec2types.Filter) ([]Subnet, error) { return p.describe(ctx, fs) },
		func(s Subnet) string { return s.ID },
		func(i int, found []Subnet) bool {
			if terms[i].ID == "" {
				return len(found) > 0
			}
			return slices.ContainsFunc(found, func(s Subnet) bool { return s.ID == terms[i].ID })
		})
	if err != nil {
		return nil, err
	}
	res := &Resolution{terms: terms, Subnets: all, Unmatched: unmatched}
	sort.Slice(res.Subnets, func(i, j int) bool {
		a, b := res.Subnets[i], res.Subnets[j]
		if a.AvailableIPs != b.AvailableIPs {
			return a.AvailableIPs > b.AvailableIPs
		}
		return a.ID < b.ID
	})
	return res, nil
}

func (p *Provider) describe(ctx context.Context, fs []ec2types.Filter) ([]Subnet, error) {
	return p.cache.Load(filters.Key(fs), func() ([]Subnet, error) {
		out, err := pages.Collect(ctx, ec2.NewDescribeSubnetsPaginator(p.ec2, &ec2.DescribeSubnetsInput{Filters: fs, MaxResults: aws.Int32(p.pageSize)}),
			func(acc []Subnet, page *ec2.DescribeSubnetsOutput) []Subnet {
				for _, s := range page.Subnets {
					acc = append(acc, fromEC2(s))
				}
				return acc
			})
		if err != nil {
			return nil, err
		}
		// Fresh counts from EC2 already include the addresses of finished launches.
		p.mu.Lock()
		for _, s := range out {
			delete(p.inflight, s.ID)
			delete(p.exhausted, s.ID)
		}
		p.mu.Unlock()
		return out, nil
	})
}

func fromEC2(s ec2types.Subnet) Subnet {
	return Subnet{
		ID:           aws.ToString(s.SubnetId),
		Zone:         aws.ToString(s.AvailabilityZone),
		ZoneID:       aws.ToString(s.AvailabilityZoneId),
		VPCID:        aws.ToString(s.VpcId),
		AvailableIPs: aws.ToInt32(s.AvailableIpAddressCount),
		Tags:         filters.TagMap(s.Tags),
	}
}

// ZonalSubnets resolves terms and returns, per zone, the subnet with the most
// free IP addresses after discounting in-flight launches.
func (p *Provider) ZonalSubnets(ctx context.Context, terms []v1.SubnetSelectorTerm) (map[string]Subnet, error) {
	res, err := p.List(ctx, terms)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	adjusted := make([]Subnet, len(res.Subnets))
	for i, s := range res.Subnets {
		s.AvailableIPs -= p.inflight[s.ID]
		if p.exhausted[s.ID] {
			s.AvailableIPs = 0
		}
		adjusted[i] = s
	}
	p.mu.Unlock()
	return MostFreeIPsPerZone(adjusted), nil
}

// ReserveIPs records that a launch into subnetID will use n addresses, until
// the subnet's free-address count is next read from EC2.
func (p *Provider) ReserveIPs(subnetID string, n int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight[subnetID] += n
}

// MarkExhausted records that a launch into subnetID failed for lack of
// addresses: until its count is next read from EC2 it counts as having no
// free address, so ZonalSubnets picks another subnet of its zone when there
// is one with addresses.
func (p *Provider) MarkExhausted(subnetID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exhausted[subnetID] = true
	delete(p.inflight, subnetID)
}

// ReleaseIPs undoes ReserveIPs for a launch that failed.
func (p *Provider) ReleaseIPs(subnetID string, n int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight[subnetID] -= n; p.inflight[subnetID] <= 0 {
		delete(p.inflight, subnetID)
	}
}

// MostFreeIPsPerZone picks, for each zone, the subnet with the most free IP
// addresses (ties: the lowest id, so the choice is stable).
func MostFreeIPsPerZone(subnets []Subnet) map[string]Subnet {
	out := map[string]Subnet{}
	for _, s := range subnets {
		cur, ok := out[s.Zone]
		if !ok || s.AvailableIPs > cur.AvailableIPs || (s.AvailableIPs == cur.AvailableIPs && s.ID < cur.ID) {
			out[s.Zone] = s
		}
	}
	return out
}

// Invalidate drops every cached answer, so the next List asks EC2.
func (p *Provider) Invalidate() { p.cache.Flush() }
