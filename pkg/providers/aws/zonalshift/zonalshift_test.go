package zonalshift_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	awsprovider "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/zonalshift"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// world is an emulator, the zonal shift provider built as the bundle builds
// it with ENABLE_ZONAL_SHIFT=true, and the launch path over both.
type world struct {
	em     *awsemulator.Emulator
	shifts *zonalshift.Provider
	env    *launchtest.Env
	nc     *awsv1.EC2NodeClass
}

func newWorld(t *testing.T) *world {
	t.Helper()
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	shifts, err := awsprovider.NewZonalShifts(context.Background(), awstest.Config(em), em.Options().ClusterName, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	lenv := launchtest.NewOn(t, em, func(o *instancetype.Options) { o.ZonalShifts = shifts })
	return &world{em: em, shifts: shifts, env: lenv, nc: lenv.NodeClass(t, "default")}
}

// launch creates an on-demand m5.large for a NodeClaim allowing zones.
func (w *world) launch(t *testing.T, name string, zones ...string) (string, error) {
	t.Helper()
	claim := launchtest.NodeClaim(name, w.nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	claim.Spec.Requirements = append(claim.Spec.Requirements, fixtures.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	inst, err := w.env.Instances.Create(context.Background(), w.nc, claim, w.env.Tags(w.nc, claim), w.env.InstanceTypesFor(t, w.nc, claim))
	if err != nil {
		return "", err
	}
	return inst.Zone, nil
}

func (w *world) available(t *testing.T, zone string) bool {
	t.Helper()
	it, err := w.env.InstanceTypes.Get(context.Background(), w.nc, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == scheduling.CapacityTypeOnDemand {
			return o.Available
		}
	}
	t.Fatalf("no on-demand offering of m5.large in %s", zone)
	return false
}

// A zonal shift of the cluster away from a zone (started through the ARC
// zonal shift API) makes the zone's offerings unavailable once the shifts
// are read again, so the next launch goes to another zone; cancelling it
// gives the zone back. Every read is GetManagedResource of the cluster's
// ARN.
func TestZonalShiftMovesLaunchesAway(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if zone, err := w.launch(t, "before", "us-west-2a", "us-west-2b"); err != nil || zone != "us-west-2a" {
		t.Fatalf("launch before the shift: zone %q, %v; want us-west-2a (the emulator's first pool)", zone, err)
	}
	shift, err := w.em.StartZonalShift("us-west-2a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.shifts.IsShifted(ctx, shift.AwayFrom) || w.available(t, "us-west-2a") {
		t.Fatalf("us-west-2a (%s) not shifted away from: shifted %v", shift.AwayFrom, w.shifts.ShiftedZoneIDs())
	}
	if !w.available(t, "us-west-2b") {
		t.Error("us-west-2b offerings unavailable during a shift of us-west-2a")
	}
	if zone, err := w.launch(t, "during", "us-west-2a", "us-west-2b"); err != nil || zone != "us-west-2b" {
		t.Fatalf("launch during the shift: zone %q, %v; want us-west-2b", zone, err)
	}
	// Only the shifted zone allowed: nothing can be launched.
	if _, err := w.launch(t, "only-a", "us-west-2a"); err == nil {
		t.Fatal("launched into the shifted zone")
	}

	if err := w.em.CancelZonalShift(shift.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.available(t, "us-west-2a") {
		t.Fatal("us-west-2a still unavailable after the shift was cancelled")
	}
	if zone, err := w.launch(t, "after", "us-west-2a", "us-west-2b"); err != nil || zone != "us-west-2a" {
		t.Fatalf("launch after the shift: zone %q, %v; want us-west-2a", zone, err)
	}
	if n := w.em.Calls("arc-zonal-shift", "GetManagedResource"); n < 3 {
		t.Errorf("%d GetManagedResource calls, want one per read (at least 3)", n)
	}
	if n := w.em.Calls("arc-zonal-shift", ""); n != w.em.Calls("arc-zonal-shift", "GetManagedResource") {
		t.Errorf("Karpenter made ARC calls other than GetManagedResource: %v", w.em.AllCalls())
	}
}

// An autoshift counts like a customer zonal shift, and ends with its
// cancellation while another zone's shift takes effect.
func TestAutoshiftCountsLikeAZonalShift(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	auto, err := w.em.StartAutoshift("us-west-2b", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if w.available(t, "us-west-2b") {
		t.Fatal("us-west-2b available during an autoshift away from it")
	}
	if err := w.em.CancelZonalShift(auto.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.em.StartZonalShift("us-west-2c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.available(t, "us-west-2b") || w.available(t, "us-west-2c") {
		t.Fatalf("after cancelling the autoshift and shifting us-west-2c: shifted %v", w.shifts.ShiftedZoneIDs())
	}
}

// The shipped controller policy allows GetManagedResource of the cluster's
// ARN, and only of it (upstream's AllowZonalShiftStatusReadOnly).
func TestShippedPolicyScopesZonalShiftReads(t *testing.T) {
	w := newWorld(t)
	if err := w.em.SetPolicy(shippedPolicy(t, w.em)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatalf("GetManagedResource of the cluster under the shipped policy: %v", err)
	}
	other := zonalshift.NewProvider(arcClient(w.em), clock.RealClock{}, "arn:aws:eks:us-west-2:123456789012:cluster/other")
	err := other.Update(ctx)
	if err == nil || !strings.Contains(err.Error(), "AccessDeniedException") {
		t.Fatalf("GetManagedResource of another cluster: %v, want AccessDeniedException", err)
	}
}

// The controller records upstream's ZonalShiftActive and ZonalShiftCleared
// events on the NodePools that can launch into the zone, naming it, and
// none on a NodePool kept out of the zone by its requirements.
func TestControllerRecordsShiftEvents(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	w := newWorld(t)
	nc := w.nc.DeepCopy()
	nc.UID, nc.ResourceVersion = "", ""
	ExpectApplied(ctx, t, e.Client, nc)
	anywhere := fixtures.NodePool("anywhere")
	anywhere.Spec.Template.Spec.NodeClassRef = fixtures.EC2NodeClassRef(nc.Name)
	elsewhere := fixtures.NodePool("elsewhere")
	elsewhere.Spec.Template.Spec.NodeClassRef = fixtures.EC2NodeClassRef(nc.Name)
	elsewhere.Spec.Template.Spec.Requirements = append(elsewhere.Spec.Template.Spec.Requirements,
		fixtures.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b"))
	ExpectApplied(ctx, t, e.Client, anywhere, elsewhere)

	rec := record.NewFakeRecorder(10)
	c := zonalshift.NewController(w.shifts, e.Client, rec, clock.RealClock{})
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	expectNoEvent(t, rec)

	shift, err := w.em.StartZonalShift("us-west-2a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want := "Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2a (" + shift.AwayFrom + ") are unavailable for this NodePool"
	if got := <-rec.Events; got != want {
		t.Fatalf("event %q, want %q", got, want)
	}
	expectNoEvent(t, rec) // not for NodePool elsewhere
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	expectNoEvent(t, rec) // nothing changed

	if err := w.em.CancelZonalShift(shift.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want = "Normal ZonalShiftCleared Zonal shift cleared: offerings in zone us-west-2a (" + shift.AwayFrom + ") are restored for this NodePool"
	if got := <-rec.Events; got != want {
		t.Fatalf("event %q, want %q", got, want)
	}
	expectNoEvent(t, rec)
}

func expectNoEvent(t *testing.T, rec *record.FakeRecorder) {
	t.Helper()
	select {
	case ev := <-rec.Events:
		t.Fatalf("unexpected event %q", ev)
	default:
	}
}

// Without ENABLE_ZONAL_SHIFT the launch path never asks ARC, and a shift
// in progress changes nothing.
func TestDisabledAsksNothing(t *testing.T) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	lenv := launchtest.NewOn(t, em)
	w := &world{em: em, env: lenv, nc: lenv.NodeClass(t, "default")}
	if _, err := em.StartZonalShift("us-west-2a", time.Hour); err != nil {
		t.Fatal(err)
	}
	em.ResetCalls()
	if zone, err := w.launch(t, "claim", "us-west-2a", "us-west-2b"); err != nil || zone != "us-west-2a" {
		t.Fatalf("launch: zone %q, %v; want us-west-2a, the shift ignored", zone, err)
	}
	if n := em.Calls("arc-zonal-shift", ""); n != 0 {
		t.Fatalf("%d ARC zonal shift calls with the feature off", n)
	}
	var off *zonalshift.Provider
	if off.IsShifted(context.Background(), "usw2-az1") || off.Update(context.Background()) != nil {
		t.Fatal("the disabled provider reports a shift or fails")
	}
}

// As upstream, an instance in a zone traffic is shifted away from is not
// terminated while the shift lasts (TerminateInstances is not even called);
// the caller's retry terminates it once the shift is cancelled.
func TestNoTerminationInAShiftedZone(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	insts := instance.NewProvider(w.env.EC2, w.env.LaunchTemplates, w.env.Providers.Subnets, w.env.Unavailable, w.env.Clock,
		instance.Options{ClusterName: w.env.ClusterName, ZonalShifts: w.shifts})
	claim := launchtest.NodeClaim("victim", w.nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	claim.Spec.Requirements = append(claim.Spec.Requirements, fixtures.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"))
	inst, err := insts.Create(ctx, w.nc, claim, w.env.Tags(w.nc, claim), w.env.InstanceTypesFor(t, w.nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	shift, err := w.em.StartZonalShift("us-west-2a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	err = insts.Delete(ctx, inst.ID)
	if err == nil || !strings.Contains(err.Error(), "zonally shifted availability zone us-west-2a") {
		t.Fatalf("delete during the shift: %v, want it skipped", err)
	}
	if n := w.em.Calls("ec2", "TerminateInstances"); n != 0 {
		t.Fatalf("%d TerminateInstances calls during the shift", n)
	}
	if err := w.em.CancelZonalShift(shift.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.shifts.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if err := insts.Delete(ctx, inst.ID); err != nil {
		t.Fatalf("delete after the shift: %v", err)
	}
	if n := w.em.Calls("ec2", "TerminateInstances"); n != 1 {
		t.Fatalf("%d TerminateInstances calls after the shift, want 1", n)
	}
}
