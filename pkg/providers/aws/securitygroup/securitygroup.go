package securitygroup

import (
	"context"
	"slices"
	"sort"
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

// SecurityGroup is one resolved security group.
type SecurityGroup struct {
	ID    string
	Name  string
	VPCID string
	Tags  map[string]string
}

// Resolution is what a list of terms resolved to.
type Resolution struct {
	// SecurityGroups matched by any term, each once, sorted by id.
	SecurityGroups []SecurityGroup
	// Unmatched are the indices of the terms that matched no group.
	Unmatched []int
	terms     []v1.SecurityGroupSelectorTerm
}

// UnmatchedMessage names every term that matched nothing; "" when all matched.
func (r *Resolution) UnmatchedMessage() string {
	return filters.Unmatched("securityGroupSelectorTerms", "security group", r.Unmatched, func(i int) string { return DescribeTerm(r.terms[i]) })
}

// DescribeTerm renders a term for messages.
func DescribeTerm(t v1.SecurityGroupSelectorTerm) string {
	return filters.Term{}.Field("id", t.ID).Field("name", t.Name).Tags(t.Tags).String()
}

// Provider resolves security group selector terms.
type Provider struct {
	ec2      *ec2.Client
	cache    *ttlcache.Cache[[]SecurityGroup]
	pageSize int32
}

// Option adjusts a Provider.
type Option func(*Provider)

// WithPageSize sets DescribeSecurityGroups MaxResults (5..1000; default 1000).
func WithPageSize(n int32) Option { return func(p *Provider) { p.pageSize = n } }

// NewProvider returns a provider whose answers live for ttl (upstream: 1 minute).
func NewProvider(ec2api *ec2.Client, clk clock.PassiveClock, ttl time.Duration, opts ...Option) *Provider {
	p := &Provider{ec2: ec2api, cache: ttlcache.New[[]SecurityGroup](clk, ttl), pageSize: 1000}
	for _, o := range opts {
		o(p)
	}
	return p
}

func queries(terms []v1.SecurityGroupSelectorTerm) []filters.Query {
	var out []filters.Query
	var ids, names []string
	var idTerms, nameTerms []int
	for i, t := range terms {
		switch {
		case t.ID != "":
			ids = append(ids, t.ID)
			idTerms = append(idTerms, i)
		case t.Name != "" && len(t.Tags) == 0:
			names = append(names, t.Name)
			nameTerms = append(nameTerms, i)
		case t.Name != "":
			// The CRD keeps name alone in a term; should both arrive anyway,
			// AND them in a request of their own.
			fs := append([]ec2types.Filter{{Name: aws.String("group-name"), Values: []string{t.Name}}}, filters.Tags(t.Tags)...)
			out = append(out, filters.Query{Filters: fs, Terms: []int{i}})
		case len(t.Tags) > 0:
			out = append(out, filters.Query{Filters: filters.Tags(t.Tags), Terms: []int{i}})
		}
	}
	if len(ids) > 0 {
		sort.Strings(ids)
		out = append(out, filters.Query{Filters: []ec2types.Filter{{Name: aws.String("group-id"), Values: filters.Uniq(ids)}}, Terms: idTerms})
	}
	if len(names) > 0 {
		sort.Strings(names)
		out = append(out, filters.Query{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: filters.Uniq(names)}}, Terms: nameTerms})
	}
	return out
}

// List resolves terms. An error means EC2 could not be asked; terms that
// match nothing are reported in the Resolution.
func (p *Provider) List(ctx context.Context, terms []v1.SecurityGroupSelectorTerm) (*Resolution, error) {
	all, unmatched, err := filters.Resolve(queries(terms), len(terms), "security groups", "securityGroupSelectorTerms",
		func(fs []ec2types.Filter) ([]SecurityGroup, error) { return p.describe(ctx, fs) },
		func(g SecurityGroup) string { return g.ID },
		func(i int, found []SecurityGroup) bool {
			t := terms[i]
			switch {
			case t.ID != "":
				return slices.ContainsFunc(found, func(g SecurityGroup) bool { return g.ID == t.ID })
			case t.Name != "" && len(t.Tags) == 0:
				return slices.ContainsFunc(found, func(g SecurityGroup) bool { return g.Name == t.Name })
			default:
				return len(found) > 0
			}
		})
	if err != nil {
		return nil, err
	}
	res := &Resolution{terms: terms, SecurityGroups: all, Unmatched: unmatched}
	sort.Slice(res.SecurityGroups, func(i, j int) bool { return res.SecurityGroups[i].ID < res.SecurityGroups[j].ID })
	return res, nil
}

func (p *Provider) describe(ctx context.Context, fs []ec2types.Filter) ([]SecurityGroup, error) {
	return p.cache.Load(filters.Key(fs), func() ([]SecurityGroup, error) {
		return pages.Collect(ctx, ec2.NewDescribeSecurityGroupsPaginator(p.ec2, &ec2.DescribeSecurityGroupsInput{Filters: fs, MaxResults: aws.Int32(p.pageSize)}),
			func(acc []SecurityGroup, page *ec2.DescribeSecurityGroupsOutput) []SecurityGroup {
				for _, g := range page.SecurityGroups {
					acc = append(acc, SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), VPCID: aws.ToString(g.VpcId), Tags: filters.TagMap(g.Tags)})
				}
				return acc
			})
	})
}

// Invalidate drops every cached answer.
func (p *Provider) Invalidate() { p.cache.Flush() }
