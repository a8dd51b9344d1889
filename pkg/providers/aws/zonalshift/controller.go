package zonalshift

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Event reasons (upstream's).
const (
	ReasonZonalShiftActive  = "ZonalShiftActive"
	ReasonZonalShiftCleared = "ZonalShiftCleared"
)

// Controller reads the shifts every PollInterval (so that a shift starts
// and ends taking effect within that time even when nothing launches) and
// records an event on every NodePool that can launch into a zone whose shift
// started or ended. It is a manager Runnable.
type Controller struct {
	provider *Provider
	kube     client.Client
	events   events.Publisher
	clock    clock.Clock

	// previous are the zone ids shifted at the last published pass.
	previous []string
}

// NewController returns the controller of p.
func NewController(p *Provider, kube client.Client, recorder record.EventRecorder, clk clock.Clock) *Controller {
	return &Controller{provider: p, kube: kube, events: events.NewPublisher(recorder, clk), clock: clk}
}

// NeedLeaderElection: only the leader launches, so only it needs the shifts.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("zonalshift"))
	for {
		if err := c.Reconcile(ctx); err != nil {
			log.FromContext(ctx).Error(err, "refreshing zonal shifts, keeping the known ones")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(PollInterval):
		}
	}
}

// Reconcile is one pass: read the shifts, then publish what changed. The
// zones published are only advanced after the events went out, so a pass
// that fails to list NodePools retries the same transitions next time.
func (c *Controller) Reconcile(ctx context.Context) error {
	if err := c.provider.Update(ctx); err != nil {
		return err
	}
	current := c.provider.ShiftedZoneIDs()
	if slices.Equal(current, c.previous) {
		return nil
	}
	started, ended := difference(current, c.previous), difference(c.previous, current)
	log.FromContext(ctx).Info("zonal shifts changed", "shiftedZoneIDs", current, "started", started, "ended", ended)
	if err := c.publish(ctx, started, ended); err != nil {
		return fmt.Errorf("publishing zonal shift events: %w", err)
	}
	c.previous = current
	return nil
}

func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// publish records, for every NodePool that can launch into a zone, that its
// shift started or ended. The NodePool's EC2NodeClass resolved subnets tell
// the zone's name from its id (ARC names zones by id, NodePools mostly by
// name); a zone the class has no subnet in does not concern the NodePool.
func (c *Controller) publish(ctx context.Context, started, ended []string) error {
	var pools v1.NodePoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing NodePools: %w", err)
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
			continue
		}
		nc := &awsv1.EC2NodeClass{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return fmt.Errorf("getting EC2NodeClass %q of NodePool %q: %w", ref.Name, np.Name, err)
		}
		reqs := nodePoolRequirements(np)
		for _, id := range started {
			if zone, ok := affected(reqs, nc, id); ok {
				c.events.Publish(events.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: ReasonZonalShiftActive,
					Message:      fmt.Sprintf("Zonal shift detected: offerings in zone %s (%s) are unavailable for this NodePool", zone, id),
					DedupeValues: []string{string(np.UID), id}})
			}
		}
		for _, id := range ended {
			if zone, ok := affected(reqs, nc, id); ok {
				c.events.Publish(events.Event{InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: ReasonZonalShiftCleared,
					Message:      fmt.Sprintf("Zonal shift cleared: offerings in zone %s (%s) are restored for this NodePool", zone, id),
					DedupeValues: []string{string(np.UID), id}})
			}
		}
	}
	return nil
}

func nodePoolRequirements(np *v1.NodePool) scheduling.Requirements {
	reqs := make([]scheduling.Requirement, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return scheduling.NewRequirements(reqs...)
}

// affected returns the name of the zone with id zoneID when the class has a
// subnet there and the NodePool's requirements allow both its name and its
// id.
func affected(reqs scheduling.Requirements, nc *awsv1.EC2NodeClass, zoneID string) (string, bool) {
	for _, s := range nc.Status.Subnets {
		if s.ZoneID != zoneID {
			continue
		}
		if !reqs.Has(corev1.LabelTopologyZone, s.Zone) || !reqs.Has(awsv1.LabelTopologyZoneID, zoneID) {
			return "", false
		}
		return s.Zone, true
	}
	return "", false
}
