package placementgroup

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// DefaultTTL is how long an answer is kept (upstream's placement group cache).
const DefaultTTL = time.Minute

// Strategies of a placement group, as EC2 names them.
const (
	StrategyCluster   = "cluster"
	StrategyPartition = "partition"
	StrategySpread    = "spread"
)

// StateAvailable is the state of a group instances can be launched into.
const StateAvailable = "available"

// PlacementGroup is one resolved placement group.
type PlacementGroup struct {
	ID             string
	Name           string
	Strategy       string // cluster | partition | spread
	PartitionCount int32  // partition groups only
	SpreadLevel    string // spread groups only: host | rack
	State          string // pending | available | deleting | deleted
}

// Resolution is what a selector resolved to: Group when EC2 knows it (in any
// state), nil when it does not.
type Resolution struct {
	Group *PlacementGroup
}

// Usable reports whether instances can be launched into the group.
func (r *Resolution) Usable() bool {
	return r != nil && r.Group != nil && r.Group.State == StateAvailable
}

// Problem is why the selector cannot be launched into, naming the field;
// "" when it can.
func (r *Resolution) Problem(sel *v1.PlacementGroupSelector) string {
	switch {
	case r.Usable():
		return ""
	case r == nil || r.Group == nil:
		return fmt.Sprintf("spec.placementGroupSelector: %s matched no placement group", Describe(sel))
	default:
		return fmt.Sprintf("spec.placementGroupSelector: placement group %s (%s) is %s, not %s", r.Group.Name, r.Group.ID, r.Group.State, StateAvailable)
	}
}

// Describe renders a selector for messages: name "x" or id "pg-...".
func Describe(sel *v1.PlacementGroupSelector) string {
	if sel == nil {
		return "no selector"
	}
	if id := aws.ToString(sel.ID); id != "" {
		return fmt.Sprintf("id %q", id)
	}
	return fmt.Sprintf("name %q", aws.ToString(sel.Name))
}

// Provider resolves placement group selectors. Safe for concurrent use.
type Provider struct {
	ec2   *ec2.Client
	cache *ttlcache.Cache[*Resolution]
}

// NewProvider returns a provider whose answers live for ttl (DefaultTTL when 0).
func NewProvider(ec2api *ec2.Client, clk clock.PassiveClock, ttl time.Duration) *Provider {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Provider{ec2: ec2api, cache: ttlcache.New[*Resolution](clk, ttl)}
}

var unknown = map[string]bool{
	"InvalidPlacementGroup.Unknown":     true,
	"InvalidPlacementGroupId.NotFound":  true,
	"InvalidPlacementGroupId.Malformed": true,
}

// Resolve asks EC2 for the selected group. A nil selector resolves to nil.
// An error means EC2 could not be asked (after the SDK's retries).
func (p *Provider) Resolve(ctx context.Context, sel *v1.PlacementGroupSelector) (*Resolution, error) {
	if sel == nil {
		return nil, nil
	}
	id, name := aws.ToString(sel.ID), aws.ToString(sel.Name)
	if id == "" && name == "" {
		return nil, nil
	}
	in := &ec2.DescribePlacementGroupsInput{}
	key := "name/" + name
	if id != "" {
		in.GroupIds = []string{id}
		key = "id/" + id
	} else {
		in.GroupNames = []string{name}
	}
	return p.cache.Load(key, func() (*Resolution, error) {
		out, err := p.ec2.DescribePlacementGroups(ctx, in)
		if err != nil {
			if unknown[awserr.Code(err)] {
				return &Resolution{}, nil
			}
			return nil, fmt.Errorf("describing placement group %s: %w", Describe(sel), err)
		}
		for i := range out.PlacementGroups {
			g := &out.PlacementGroups[i]
			if (id != "" && aws.ToString(g.GroupId) == id) || (id == "" && aws.ToString(g.GroupName) == name) {
				return &Resolution{Group: fromEC2(g)}, nil
			}
		}
		return &Resolution{}, nil
	})
}

func fromEC2(g *ec2types.PlacementGroup) *PlacementGroup {
	return &PlacementGroup{
		ID:             aws.ToString(g.GroupId),
		Name:           aws.ToString(g.GroupName),
		Strategy:       string(g.Strategy),
		PartitionCount: aws.ToInt32(g.PartitionCount),
		SpreadLevel:    string(g.SpreadLevel),
		State:          string(g.State),
	}
}

// Invalidate drops every cached answer, so the next Resolve asks EC2.
func (p *Provider) Invalidate() { p.cache.Flush() }
