package capacityreservation_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	crcontrollers "github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

func reservedClaim(t *testing.T, ctx context.Context, name, reservation string) *v1.NodeClaim {
	t.Helper()
	nc := fixtures.NodeClaim(name, fixtures.WithNodeClass("default"), fixtures.WithProviderID("aws:///us-west-2a/i-"+name),
		fixtures.WithFinalizers(v1.TerminationFinalizer),
		fixtures.WithLabels(map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: reservation,
			awsv1.LabelCapacityReservationType: "capacity-block", awsv1.LabelCapacityReservationInterruptible: "false"}))
	ExpectApplied(ctx, t, e.Client, nc)
	return nc
}

func deleting(t *testing.T, ctx context.Context, name string) bool {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return !nc.DeletionTimestamp.IsZero()
}

// A Capacity Block's NodeClaims are deleted once the block is within 40
// minutes of its end (EC2 reclaims at 30), not before; a block ending later
// and an ODCR without end keep theirs.
func TestExpiringCapacityBlockNodeClaimsAreDeleted(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{})
	em, err := awsemulator.Start(awsemulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Close() })
	clk := clocktesting.NewFakeClock(time.Now())
	soon := em.AddCapacityReservation(awsemulator.CapacityReservation{InstanceType: "m5.large", Zone: "us-west-2a", ReservationType: "capacity-block", EndDate: clk.Now().Add(50 * time.Minute)})
	later := em.AddCapacityReservation(awsemulator.CapacityReservation{InstanceType: "m5.large", Zone: "us-west-2a", ReservationType: "capacity-block", EndDate: clk.Now().Add(5 * time.Hour)})
	odcr := em.AddCapacityReservation(awsemulator.CapacityReservation{InstanceType: "m5.large", Zone: "us-west-2a"})
	reservedClaim(t, ctx, "in-soon", soon.ID)
	reservedClaim(t, ctx, "in-later", later.ID)
	reservedClaim(t, ctx, "in-odcr", odcr.ID)

	provider := capacityreservation.NewProvider(ec2.NewFromConfig(awstest.Config(em)), clk, 0)
	ctrl := crcontrollers.NewExpiration(e.Client, provider, clk)
	if err := ctrl.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"in-soon", "in-later", "in-odcr"} {
		if deleting(t, ctx, n) {
			t.Fatalf("%s deleted 50 minutes before its block ends", n)
		}
	}
	clk.Step(11 * time.Minute) // 39 minutes left
	if err := ctrl.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if !deleting(t, ctx, "in-soon") {
		t.Fatal("the NodeClaim of a block 39 minutes from its end is not deleted")
	}
	for _, n := range []string{"in-later", "in-odcr"} {
		if deleting(t, ctx, n) {
			t.Fatalf("%s deleted though its reservation is not expiring", n)
		}
	}
}

// instances is the cloud provider's view: what EC2 reports each instance as.
type instances []*v1.NodeClaim

func (i instances) List(context.Context) ([]*v1.NodeClaim, error) { return i, nil }

// A reserved NodeClaim whose instance EC2 now reports on-demand (its
// reservation ended under it) becomes on-demand, without reservation labels,
// and so does its registered Node; one EC2 still reports reserved stays.
func TestEndedReservationRelabelsOnDemand(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	ended := reservedClaim(t, ctx, "ended", "cr-ended")
	still := reservedClaim(t, ctx, "still", "cr-still")
	node := fixtures.Node("ended", fixtures.WithProviderID(ended.Status.ProviderID), fixtures.WithLabels(map[string]string{
		v1.CapacityTypeLabelKey: v1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: "cr-ended", v1.NodeRegisteredLabelKey: "true"}))
	ExpectApplied(ctx, t, e.Client, node)
	view := instances{
		{Status: v1.NodeClaimStatus{ProviderID: ended.Status.ProviderID}},
		{Status: v1.NodeClaimStatus{ProviderID: still.Status.ProviderID}},
	}
	view[0].Labels = map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}
	view[1].Labels = map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: "cr-still"}
	if err := crcontrollers.NewCapacityType(e.Client, view, clocktesting.NewFakeClock(time.Now())).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: "ended"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand || got.Labels[awsv1.LabelCapacityReservationID] != "" || got.Labels[awsv1.LabelCapacityReservationType] != "" {
		t.Fatalf("nodeclaim labels %v, want on-demand without reservation labels", got.Labels)
	}
	n := &corev1.Node{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: "ended"}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand || n.Labels[awsv1.LabelCapacityReservationID] != "" {
		t.Fatalf("node labels %v, want on-demand without reservation labels", n.Labels)
	}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: "still"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeReserved || got.Labels[awsv1.LabelCapacityReservationID] != "cr-still" {
		t.Fatalf("a NodeClaim still reserved was relabelled: %v", got.Labels)
	}
}
