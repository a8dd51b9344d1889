package instance_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// decide solves pods (each needing its own m5.large) against the class's
// offerings as they are now, and launches every claim of the decision
// concurrently, as the provisioner does.
func decide(t *testing.T, env *launchtest.Env, nc *awsv1.EC2NodeClass, prefix string, n int) []*scheduling.NewClaim {
	t.Helper()
	all, err := env.InstanceTypes.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	var its []*scheduling.InstanceType
	for _, it := range all {
		if it.Name == "m5.large" {
			its = append(its, it)
		}
	}
	pool := &scheduling.NodePool{Name: "default", InstanceTypes: its, Requirements: scheduling.NewRequirements(
		scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, scheduling.CapacityTypeReserved, scheduling.CapacityTypeOnDemand),
		scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, "us-west-2b"))}
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		pods = append(pods, fixtures.Pod(name, fixtures.WithUID(name), fixtures.WithRequests("cpu", "1500m", "memory", "1Gi")))
	}
	res := scheduling.Solve(&scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{pool}})
	if len(res.PodErrors) > 0 || len(res.NewClaims) != n {
		t.Fatalf("%s: %d claims, pod errors %v; want %d claims", prefix, len(res.NewClaims), res.PodErrors, n)
	}
	errs := make(chan error, n)
	for i, c := range res.NewClaims {
		claim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-claim-%d", prefix, i), Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}},
		}
		for _, r := range c.Requirements.NodeSelectorRequirements() {
			claim.Spec.Requirements = append(claim.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values})
		}
		go func() {
			_, err := env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), c.InstanceTypes)
			errs <- err
		}()
	}
	for range res.NewClaims {
		if err := <-errs; err != nil {
			t.Errorf("%s: launch: %v", prefix, err)
		}
	}
	return res.NewClaims
}

// A reservation with two free slots and five pods that each need a node of
// its type, placed by two quick decisions (the second before EC2 is asked
// about the reservation again): exactly two nodes launch into the
// reservation, the rest on-demand, and EC2 never refuses a launch into it.
func TestReservationNeverOverbookedAcrossDecisions(t *testing.T) {
	env := launchtest.New(t)
	const id = "cr-0a1b2c3d4e5f60718"
	env.Emulator.AddCapacityReservation(awsemulator.CapacityReservation{ID: id, Zone: "us-west-2b", InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", TotalInstanceCount: 3, AvailableInstanceCount: 2})
	nc := env.NodeClass(t, "default")
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: id}}
	env.Resolve(t, nc)

	decide(t, env, nc, "first", 3)
	decide(t, env, nc, "second", 2)

	reserved, onDemand := 0, 0
	for _, in := range env.Emulator.Instances() {
		switch {
		case in.CapacityReservationID == id:
			reserved++
		case in.CapacityReservationID == "" && in.CapacityType == "on-demand":
			onDemand++
		default:
			t.Errorf("instance %s: %s in %q", in.ID, in.CapacityType, in.CapacityReservationID)
		}
	}
	if reserved != 2 || onDemand != 3 {
		t.Errorf("%d instances in the reservation and %d on-demand, want 2 and 3", reserved, onDemand)
	}
	if n := env.Emulator.ReservationRefusals(id); n != 0 {
		t.Errorf("EC2 refused %d launches into the full reservation, want none", n)
	}
	for _, cr := range env.Emulator.CapacityReservations() {
		if cr.ID == id && cr.AvailableInstanceCount != 0 {
			t.Errorf("reservation has %d free slots left, want 0", cr.AvailableInstanceCount)
		}
	}
}
