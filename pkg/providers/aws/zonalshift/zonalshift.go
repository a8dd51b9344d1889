// Package zonalshift follows the ARC zonal shifts of the cluster (settings
// ENABLE_ZONAL_SHIFT), as upstream Karpenter does: it asks the ARC zonal
// shift API (GetManagedResource) about the EKS cluster's ARN, keeps the zone
// ids traffic is shifted away from, and the instance type provider marks
// every offering in such a zone unavailable while the shift lasts, so nothing
// is launched into an impaired zone. A controller refreshes the shifts every
// PollInterval and records ZonalShiftActive / ZonalShiftCleared events on the
// NodePools that can launch into the zone (controller.go).
//
// A nil *Provider is the disabled feature: nothing is shifted and ARC is
// never asked.
package zonalshift

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// PollInterval is how often the shifts are read again (upstream's zonal
// shift controller requeues after 30 seconds).
const PollInterval = 30 * time.Second

// API is the part of the ARC zonal shift client the provider uses.
type API interface {
	GetManagedResource(ctx context.Context, in *arczonalshift.GetManagedResourceInput, optFns ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error)
}

// shift is one zone's shift as ARC last reported it.
type shift struct {
	expires time.Time // zero: ARC gave no expiry, active until ARC drops it
	applied bool
}

// Provider tracks the zonal shifts of one resource (the cluster's ARN). It
// is safe for concurrent use.
type Provider struct {
	api        API
	clock      clock.PassiveClock
	resourceID string

	mu       sync.Mutex
	shifts   map[string]shift // zone id -> shift
	hydrated bool
	// seq changes whenever the set of shifted zones may have changed, so
	// that callers caching what they derive from it (instance type
	// offerings) rebuild it.
	seq     uint64
	lastSet string
}

// NewProvider returns a provider of resourceID's shifts (the EKS cluster's
// ARN, the identifier ARC knows the cluster by).
func NewProvider(api API, clk clock.PassiveClock, resourceID string) *Provider {
	return &Provider{api: api, clock: clk, resourceID: resourceID, shifts: map[string]shift{}}
}

// ResourceID is the ARN the provider asks ARC about.
func (p *Provider) ResourceID() string {
	if p == nil {
		return ""
	}
	return p.resourceID
}

// Update reads the resource's shifts from ARC. Every shift ARC lists counts,
// whatever its type (customer zonal shift, autoshift, practice run), as long
// as it is APPLIED and not expired: that is the one in effect for the
// resource. As upstream's, a failed read keeps what was known.
func (p *Provider) Update(ctx context.Context) error {
	if p == nil {
		return nil
	}
	out, err := p.api.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(p.resourceID)})
	if err != nil {
		return fmt.Errorf("getting the zonal shifts of %s: %w", p.resourceID, err)
	}
	shifts := map[string]shift{}
	for _, s := range out.ZonalShifts {
		zone := aws.ToString(s.AwayFrom)
		if zone == "" {
			continue
		}
		cur := shift{expires: aws.ToTime(s.ExpiryTime), applied: s.AppliedStatus == arctypes.AppliedStatusApplied}
		// Two shifts away from one zone: the one in effect wins.
		if prev, ok := shifts[zone]; ok && prev.applied && !cur.applied {
			continue
		}
		shifts[zone] = cur
	}
	p.mu.Lock()
	p.shifts = shifts
	p.hydrated = true
	p.mu.Unlock()
	log.FromContext(ctx).V(1).Info("read zonal shifts", "resource", p.resourceID, "shiftedZoneIDs", p.ShiftedZoneIDs())
	return nil
}

// hydrate reads the shifts once before the first answer, so that a launch
// right after start-up does not miss a shift in progress (upstream's
// ensureHydrated). A failure is logged and retried on the next question.
func (p *Provider) hydrate(ctx context.Context) {
	p.mu.Lock()
	done := p.hydrated
	p.mu.Unlock()
	if done {
		return
	}
	if err := p.Update(ctx); err != nil {
		log.FromContext(ctx).Error(err, "reading zonal shifts")
	}
}

// IsShifted reports whether traffic is shifted away from the zone id now.
func (p *Provider) IsShifted(ctx context.Context, zoneID string) bool {
	if p == nil || zoneID == "" {
		return false
	}
	p.hydrate(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active(p.shifts[zoneID])
}

func (p *Provider) active(s shift) bool {
	return s.applied && (s.expires.IsZero() || s.expires.After(p.clock.Now()))
}

// ShiftedZoneIDs are the zone ids traffic is shifted away from now, sorted.
func (p *Provider) ShiftedZoneIDs() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, s := range p.shifts {
		if p.active(s) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Seq changes whenever the set of shifted zones changed since the last call,
// an expiry included.
func (p *Provider) Seq(ctx context.Context) uint64 {
	if p == nil {
		return 0
	}
	p.hydrate(ctx)
	set := fmt.Sprint(p.ShiftedZoneIDs())
	p.mu.Lock()
	defer p.mu.Unlock()
	if set != p.lastSet {
		p.lastSet = set
		p.seq++
	}
	return p.seq
}
