package capacityreservation

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/filters"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// ExpirationBuffer is how long before a Capacity Block ends its reservation
// counts as expiring: EC2 starts reclaiming a block's instances 30 minutes
// before its end, and 10 more minutes leave room to drain the nodes.
const ExpirationBuffer = 40 * time.Minute

// Reservation is one resolved, active reservation.
type Reservation struct {
	ID                     string
	OwnerID                string
	InstanceType           string
	Zone                   string
	InstanceMatchCriteria  string
	ReservationType        v1.CapacityReservationType
	Interruptible          bool
	EndTime                *time.Time
	AvailableInstanceCount int32
	Tags                   map[string]string
}

// State is active, or expiring for a Capacity Block within ExpirationBuffer
// of its end. Pure: the caller supplies now.
func (r Reservation) State(now time.Time) v1.CapacityReservationState {
	if r.ReservationType == v1.CapacityReservationTypeCapacityBlock && r.EndTime != nil && !now.Before(r.EndTime.Add(-ExpirationBuffer)) {
		return v1.CapacityReservationStateExpiring
	}
	return v1.CapacityReservationStateActive
}

// Status renders r as an entry of status.capacityReservations.
func (r Reservation) Status(now time.Time) v1.CapacityReservation {
	out := v1.CapacityReservation{
		AvailabilityZone:      r.Zone,
		ID:                    r.ID,
		InstanceMatchCriteria: r.InstanceMatchCriteria,
		InstanceType:          r.InstanceType,
		OwnerID:               r.OwnerID,
		ReservationType:       r.ReservationType,
		Interruptible:         r.Interruptible,
		State:                 r.State(now),
	}
	if r.EndTime != nil {
		t := metav1.NewTime(*r.EndTime)
		out.EndTime = &t
	}
	return out
}

// Resolution is what a list of terms resolved to.
type Resolution struct {
	// Reservations matched by any term, each once, sorted by id.
	Reservations []Reservation
	// Unmatched are the indices of the terms that matched no reservation.
	Unmatched []int
	terms     []v1.CapacityReservationSelectorTerm
}

// UnmatchedMessage names every term that matched nothing, e.g.
// `capacityReservationSelectorTerms[1] matched no active capacity
// reservation: id "cr-0123"`; "" when every term matched.
func (r *Resolution) UnmatchedMessage() string {
	return filters.Unmatched("capacityReservationSelectorTerms", "active capacity reservation", r.Unmatched, func(i int) string { return DescribeTerm(r.terms[i]) })
}

// DescribeTerm renders a term for messages.
func DescribeTerm(t v1.CapacityReservationSelectorTerm) string {
	return filters.Term{}.Field("id", t.ID).Tags(t.Tags).Field("ownerID", t.OwnerID).Field("instanceMatchCriteria", t.InstanceMatchCriteria).String()
}

// Provider resolves capacity reservation selector terms, and counts the
// instances each reservation it has seen can still take.
type Provider struct {
	ec2      *ec2.Client
	cache    *ttlcache.Cache[[]Reservation]
	pageSize int32
	counts   *Availability
}

// Option adjusts a Provider.
type Option func(*Provider)

// WithPageSize sets DescribeCapacityReservations MaxResults (1..1000; default 1000).
func WithPageSize(n int32) Option { return func(p *Provider) { p.pageSize = n } }

// NewProvider returns a provider whose answers live for ttl.
func NewProvider(ec2api *ec2.Client, clk clock.PassiveClock, ttl time.Duration, opts ...Option) *Provider {
	p := &Provider{ec2: ec2api, cache: ttlcache.New[[]Reservation](clk, ttl), pageSize: 1000, counts: NewAvailability()}
	for _, o := range opts {
		o(p)
	}
	return p
}

var activeFilter = ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}

// queries groups id terms into one request and gives every other term its own.
func queries(terms []v1.CapacityReservationSelectorTerm) []filters.Query {
	var out []filters.Query
	var ids []string
	var idTerms []int
	for i, t := range terms {
		if t.ID != "" {
			ids = append(ids, t.ID)
			idTerms = append(idTerms, i)
			continue
		}
		if len(t.Tags) == 0 && t.InstanceMatchCriteria == "" {
			continue // the CRD rejects such a term; it selects nothing
		}
		fs := filters.Tags(t.Tags)
		if t.OwnerID != "" {
			fs = append(fs, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
		}
		if t.InstanceMatchCriteria != "" {
			fs = append(fs, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{t.InstanceMatchCriteria}})
		}
		out = append(out, filters.Query{Filters: append(fs, activeFilter), Terms: []int{i}})
	}
	if len(ids) > 0 {
		sort.Strings(ids)
		out = append(out, filters.Query{Filters: []ec2types.Filter{{Name: aws.String("capacity-reservation-id"), Values: filters.Uniq(ids)}, activeFilter}, Terms: idTerms})
	}
	return out
}

// List resolves terms. An error means EC2 could not be asked (after the SDK's
// retries); terms that match nothing are reported in the Resolution.
func (p *Provider) List(ctx context.Context, terms []v1.CapacityReservationSelectorTerm) (*Resolution, error) {
	all, unmatched, err := filters.Resolve(queries(terms), len(terms), "capacity reservations", "capacityReservationSelectorTerms",
		func(fs []ec2types.Filter) ([]Reservation, error) { return p.describe(ctx, fs) },
		func(r Reservation) string { return r.ID },
		func(i int, found []Reservation) bool {
			if terms[i].ID == "" {
				return len(found) > 0
			}
			return slices.ContainsFunc(found, func(r Reservation) bool { return r.ID == terms[i].ID })
		})
	if err != nil {
		return nil, err
	}
	res := &Resolution{terms: terms, Reservations: all, Unmatched: unmatched}
	sort.Slice(res.Reservations, func(i, j int) bool { return res.Reservations[i].ID < res.Reservations[j].ID })
	return res, nil
}

func (p *Provider) describe(ctx context.Context, fs []ec2types.Filter) ([]Reservation, error) {
	return p.cache.Load(filters.Key(fs), func() ([]Reservation, error) {
		out, err := pages.Collect(ctx, ec2.NewDescribeCapacityReservationsPaginator(p.ec2, &ec2.DescribeCapacityReservationsInput{Filters: fs, MaxResults: aws.Int32(p.pageSize)}),
			func(acc []Reservation, page *ec2.DescribeCapacityReservationsOutput) []Reservation {
				for _, r := range page.CapacityReservations {
					acc = append(acc, fromEC2(r))
				}
				return acc
			})
		if err == nil {
			// EC2's figures replace what launches and terminations since the
			// last answer made of them: they already count those.
			for _, r := range out {
				p.counts.Set(r.ID, int(r.AvailableInstanceCount))
			}
		}
		return out, err
	})
}

func fromEC2(r ec2types.CapacityReservation) Reservation {
	rt := v1.CapacityReservationTypeDefault
	if r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
		rt = v1.CapacityReservationTypeCapacityBlock
	}
	return Reservation{
		ID:                     aws.ToString(r.CapacityReservationId),
		OwnerID:                aws.ToString(r.OwnerId),
		InstanceType:           aws.ToString(r.InstanceType),
		Zone:                   aws.ToString(r.AvailabilityZone),
		InstanceMatchCriteria:  string(r.InstanceMatchCriteria),
		ReservationType:        rt,
		Interruptible:          aws.ToBool(r.Interruptible),
		EndTime:                r.EndDate,
		AvailableInstanceCount: aws.ToInt32(r.AvailableInstanceCount),
		Tags:                   filters.TagMap(r.Tags),
	}
}

// Availability is the provider's count of free slots per reservation.
func (p *Provider) Availability() *Availability { return p.counts }

// Invalidate drops every cached answer, so the next List asks EC2.
func (p *Provider) Invalidate() { p.cache.Flush() }
