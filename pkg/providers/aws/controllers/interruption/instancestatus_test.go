package interruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancestatus"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	awssqs "github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

const pollInterval = 50 * time.Millisecond

// setupInstanceStatus runs the instance status controller, polling the
// emulator every pollInterval, in a manager next to the queue controller
// (both need the instance-ID indexes).
func setupInstanceStatus(t *testing.T) *fixture {
	t.Helper()
	logs.reset()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	if _, err := em.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	mgr := env.NewManager(t, e.Config, e.Scheme)
	unavailable := instancetype.NewUnavailableOfferings(clock.RealClock{})
	recorder := mgr.GetEventRecorderFor("karpenter") //nolint:staticcheck // the controllers take a record.EventRecorder
	queue := interruption.NewController(mgr.GetClient(), awssqs.NewProvider(sqs.NewFromConfig(cfg), queueName), unavailable, recorder, clock.RealClock{}, interruption.Options{})
	statuses := interruption.NewInstanceStatusController(mgr.GetClient(), instancestatus.NewProvider(ec2.NewFromConfig(cfg), clock.RealClock{}),
		unavailable, recorder, clock.RealClock{}, interruption.InstanceStatusOptions{Interval: pollInterval})
	if err := queue.Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	if err := statuses.Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	return &fixture{ctx: ctx, aws: em, kube: mgr.GetClient(), unavailable: unavailable, logs: logs}
}

// seeded is a running emulator instance the cluster has a NodeClaim and Node for.
func (f *fixture) seeded(t *testing.T, name string) instance {
	t.Helper()
	in, _, err := f.aws.SeedRunningInstance(awsemulator.PreexistingInstance{InstanceType: "m5.large"})
	if err != nil {
		t.Fatal(err)
	}
	return instance{name: name, id: in.ID, instanceType: in.InstanceType, zone: in.Zone, capacityType: v1.CapacityTypeOnDemand}
}

func (f *fixture) setHealth(t *testing.T, id string, h awsemulator.InstanceHealth) {
	t.Helper()
	if err := f.aws.SetInstanceHealth(id, h); err != nil {
		t.Fatal(err)
	}
}

// waitPolls waits until the controller has polled n more times (three calls each).
func (f *fixture) waitPolls(t *testing.T, n int) {
	t.Helper()
	target := f.aws.Calls("ec2", "DescribeInstanceStatus") + 3*n
	Eventually(t, 30*time.Second, func() error {
		if got := f.aws.Calls("ec2", "DescribeInstanceStatus"); got < target {
			return fmt.Errorf("%d DescribeInstanceStatus calls, waiting for %d", got, target)
		}
		return nil
	})
}

func unhealthyCount(category instancestatus.Category) float64 {
	return testutil.ToFloat64(interruption.InstanceStatusUnhealthy.WithLabelValues(string(category)))
}

// An instance whose instance status check has failed for longer than the
// threshold has its NodeClaim deleted with the termination timestamp set to
// now, InstanceUnhealthy and TerminatingOnInterruption events, one
// nodeclaims_disrupted_total{reason=instance_status}, and is counted once in
// instance_status_unhealthy_total however many polls report it, and once
// more when it fails again after recovering. Instances failing for less than
// the threshold, healthy ones and other accounts' are left alone.
func TestInstanceStatusImpairedInstanceIsReplaced(t *testing.T) {
	f := setupInstanceStatus(t)
	impaired, recent, healthy := f.seeded(t, "impaired"), f.seeded(t, "recent"), f.seeded(t, "healthy")
	stranger := f.seeded(t, "stranger") // no NodeClaim: not the cluster's
	nc, node := f.launched(t, impaired)
	recentNC, _ := f.launched(t, recent)
	healthyNC, _ := f.launched(t, healthy)
	before, disruptedBefore := unhealthyCount(instancestatus.InstanceStatus), disrupted(nc, "instance_status")
	systemBefore := unhealthyCount(instancestatus.SystemStatus)

	failing := awsemulator.InstanceHealth{Instance: awsemulator.StatusCheck{Status: awsemulator.CheckFailed, ImpairedSince: time.Now().Add(-5 * time.Minute)}}
	f.setHealth(t, impaired.id, failing)
	f.setHealth(t, stranger.id, failing)
	f.setHealth(t, recent.id, awsemulator.InstanceHealth{System: awsemulator.StatusCheck{Status: awsemulator.CheckFailed}})

	expectDeleting(t, f.ctx, nc)
	cur := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if ts, err := time.Parse(time.RFC3339, cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("termination timestamp %q, want about now", cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	}
	for _, reason := range []string{interruption.ReasonInstanceUnhealthy, interruption.ReasonTerminatingOnInterruption} {
		expectEvent(t, nc, reason)
		expectEvent(t, node, reason)
	}
	f.waitPolls(t, 3)
	expectNotDeleting(t, f.ctx, recentNC)
	expectNotDeleting(t, f.ctx, healthyNC)
	if got := unhealthyCount(instancestatus.InstanceStatus) - before; got != 1 {
		t.Errorf("instance_status_unhealthy_total{category=InstanceStatus} grew by %v over several polls, want 1", got)
	}
	if got := unhealthyCount(instancestatus.SystemStatus) - systemBefore; got != 0 {
		t.Errorf("instance_status_unhealthy_total{category=SystemStatus} grew by %v for a check failing under the threshold", got)
	}
	if got := disrupted(nc, "instance_status") - disruptedBefore; got != 1 {
		t.Errorf("nodeclaims_disrupted_total{reason=instance_status} grew by %v, want 1", got)
	}
	if !logs.contains("detected unhealthy instance owned by cluster") {
		t.Error("the unhealthy instance was not logged")
	}

	// Recovered, then failing again: counted again.
	f.setHealth(t, impaired.id, awsemulator.InstanceHealth{})
	f.waitPolls(t, 2)
	f.setHealth(t, impaired.id, failing)
	Eventually(t, 30*time.Second, func() error {
		if got := unhealthyCount(instancestatus.InstanceStatus) - before; got != 2 {
			return fmt.Errorf("instance_status_unhealthy_total{category=InstanceStatus} grew by %v, want 2 after failing again", got)
		}
		return nil
	})
}

// A scheduled event counts at once; its NodeClaim is deleted without the
// forced termination timestamp, with reason event_status.
func TestInstanceStatusScheduledEvent(t *testing.T) {
	f := setupInstanceStatus(t)
	retiring := f.seeded(t, "retiring")
	nc, node := f.launched(t, retiring)
	before, disruptedBefore := unhealthyCount(instancestatus.EventStatus), disrupted(nc, "event_status")
	f.setHealth(t, retiring.id, awsemulator.InstanceHealth{Events: []awsemulator.InstanceEvent{{Code: "instance-retirement", NotBefore: time.Now().Add(48 * time.Hour)}}})

	expectDeleting(t, f.ctx, nc)
	expectEvent(t, node, interruption.ReasonInstanceUnhealthy)
	f.waitPolls(t, 2)
	cur := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if v, ok := cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t.Errorf("a scheduled event set the termination timestamp %q", v)
	}
	if got := unhealthyCount(instancestatus.EventStatus) - before; got != 1 {
		t.Errorf("instance_status_unhealthy_total{category=EventStatus} grew by %v, want 1", got)
	}
	if got := disrupted(nc, "event_status") - disruptedBefore; got != 1 {
		t.Errorf("nodeclaims_disrupted_total{reason=event_status} grew by %v, want 1", got)
	}
}

// Without ec2:DescribeInstanceStatus the controller logs why and stops
// polling after the first refused call.
func TestInstanceStatusUnauthorizedStopsPolling(t *testing.T) {
	logs.reset()
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	em.DenyAction("ec2", "DescribeInstanceStatus")
	cfg := awstest.Config(em)
	clk := clocktesting.NewFakeClock(time.Now())
	c := interruption.NewInstanceStatusController(e.Client, instancestatus.NewProvider(ec2.NewFromConfig(cfg), clk), nil, nil, clk, interruption.InstanceStatusOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start kept polling after UnauthorizedOperation")
	}
	if calls := em.Calls("ec2", "DescribeInstanceStatus"); calls != 1 {
		t.Errorf("%d DescribeInstanceStatus calls, want 1", calls)
	}
	if !logs.contains(interruption.UnauthorizedInstanceStatusMessage) {
		t.Error("the missing permission was not logged")
	}
}

// An instance unhealthy in several categories is counted once in each, but
// its NodeClaim is deleted (and counted disrupted) once, for the failed status
// check, with the forced termination timestamp.
func TestInstanceStatusSeveralCategoriesDeleteOnce(t *testing.T) {
	f := setupInstanceStatus(t)
	broken := f.seeded(t, "broken")
	nc, _ := f.launched(t, broken)
	systemBefore, eventBefore := unhealthyCount(instancestatus.SystemStatus), unhealthyCount(instancestatus.EventStatus)
	systemDisrupted, eventDisrupted := disrupted(nc, "system_status"), disrupted(nc, "event_status")
	f.setHealth(t, broken.id, awsemulator.InstanceHealth{
		System: awsemulator.StatusCheck{Status: awsemulator.CheckFailed, ImpairedSince: time.Now().Add(-10 * time.Minute)},
		Events: []awsemulator.InstanceEvent{{Code: "system-maintenance"}},
	})

	expectDeleting(t, f.ctx, nc)
	f.waitPolls(t, 2)
	cur := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if _, ok := cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; !ok {
		t.Error("the failed system check did not set the termination timestamp")
	}
	for category, before := range map[instancestatus.Category]float64{instancestatus.SystemStatus: systemBefore, instancestatus.EventStatus: eventBefore} {
		if got := unhealthyCount(category) - before; got != 1 {
			t.Errorf("instance_status_unhealthy_total{category=%s} grew by %v, want 1", category, got)
		}
	}
	if got := disrupted(nc, "system_status") - systemDisrupted; got != 1 {
		t.Errorf("nodeclaims_disrupted_total{reason=system_status} grew by %v, want 1", got)
	}
	if got := disrupted(nc, "event_status") - eventDisrupted; got != 0 {
		t.Errorf("nodeclaims_disrupted_total{reason=event_status} grew by %v, want 0: the NodeClaim was deleted twice", got)
	}
}
