package capacityreservation

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
)

// ExpirationName is the expiration controller's name (upstream's).
const ExpirationName = "capacityreservation.expiration"

// Reservations resolves reservations by id (the capacity reservation
// provider).
type Reservations interface {
	List(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) (*capacityreservation.Resolution, error)
}

// Expiration deletes the NodeClaims of expiring Capacity Blocks.
type Expiration struct {
	loop
	kube         client.Client
	reservations Reservations
}

// NewExpiration returns the expiration controller.
func NewExpiration(kube client.Client, reservations Reservations, clk clock.Clock) *Expiration {
	e := &Expiration{kube: kube, reservations: reservations}
	e.loop = loop{name: ExpirationName, clock: clk, pass: e.Pass}
	return e
}

// Pass deletes every NodeClaim labelled with a reservation that EC2 still
// lists and that is expiring now. A reservation EC2 no longer lists as
// active is left to EC2, as upstream does.
func (e *Expiration) Pass(ctx context.Context) error {
	list := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, list, client.HasLabels{awsv1.LabelCapacityReservationID}); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	ids := map[string]bool{}
	for i := range list.Items {
		ids[list.Items[i].Labels[awsv1.LabelCapacityReservationID]] = true
	}
	if len(ids) == 0 {
		return nil
	}
	terms := make([]awsv1.CapacityReservationSelectorTerm, 0, len(ids))
	for id := range ids {
		terms = append(terms, awsv1.CapacityReservationSelectorTerm{ID: id})
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].ID < terms[j].ID })
	res, err := e.reservations.List(ctx, terms)
	if err != nil {
		return fmt.Errorf("describing capacity reservations: %w", err)
	}
	now := e.clock.Now()
	expiring := map[string]bool{}
	for _, r := range res.Reservations {
		if r.State(now) == awsv1.CapacityReservationStateExpiring {
			expiring[r.ID] = true
		}
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		id := nc.Labels[awsv1.LabelCapacityReservationID]
		if !expiring[id] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if err := e.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		log.FromContext(ctx).Info("initiating delete for capacity block expiration", "NodeClaim", nc.Name, "capacity-reservation-id", id)
	}
	return errors.Join(errs...)
}
