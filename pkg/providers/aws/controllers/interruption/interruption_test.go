package interruption_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	awssqs "github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func event(source, detailType, detail string) string {
	return `{"version":"0","id":"e-1","detail-type":"` + detailType + `","source":"` + source + `","account":"123456789012",` +
		`"time":"` + time.Now().UTC().Format(time.RFC3339) + `","region":"us-west-2","resources":[],"detail":` + detail + `}`
}

func spotWarning(id string) string {
	return event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"`+id+`","instance-action":"terminate"}`)
}

func stateChange(id, state string) string {
	return event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"`+id+`","state":"`+state+`"}`)
}

func scheduledChange(ids ...string) string {
	entities := ""
	for i, id := range ids {
		if i > 0 {
			entities += ","
		}
		entities += `{"entityValue":"` + id + `"}`
	}
	return event("aws.health", "AWS Health Event", `{"eventArn":"arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/x",`+
		`"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_STOP_SCHEDULED","eventTypeCategory":"scheduledChange",`+
		`"startTime":"Tue, 24 Nov 2026 15:00:00 GMT","affectedEntities":[`+entities+`]}`)
}

// A spot interruption warning marks the offering unavailable, deletes the
// NodeClaim (the core drains the node), records SpotInterrupted and
// TerminatingOnInterruption on the NodeClaim and Node, and deletes the message.
func TestSpotInterruption(t *testing.T) {
	f := setup(t, false)
	spot := instance{name: "spot-1", id: "i-0spot00000000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeSpot}
	bystander := instance{name: "spot-2", id: "i-0spot00000000002", instanceType: "m5.large", zone: "us-west-2b", capacityType: v1.CapacityTypeSpot}
	nc, node := f.launched(t, spot)
	other, _ := f.launched(t, bystander)
	before, disruptedBefore := snapshot(t), disrupted(nc, "spot_interrupted")

	f.send(t, spotWarning(spot.id))
	f.expectQueueEmpty(t)

	expectDeleting(t, f.ctx, nc)
	expectNotDeleting(t, f.ctx, other)
	if !f.unavailable.IsUnavailable(v1.CapacityTypeSpot, "m5.large", "us-west-2a") {
		t.Error("spot m5.large in us-west-2a was not marked unavailable")
	}
	if f.unavailable.IsUnavailable(v1.CapacityTypeSpot, "m5.large", "us-west-2b") || f.unavailable.IsUnavailable(v1.CapacityTypeOnDemand, "m5.large", "us-west-2a") {
		t.Error("an offering other than the interrupted one was marked unavailable")
	}
	for _, reason := range []string{interruption.ReasonSpotInterrupted, interruption.ReasonTerminatingOnInterruption} {
		expectEvent(t, nc, reason)
		expectEvent(t, node, reason)
	}
	expectCounted(t, before, map[string]float64{"spot_interrupted": 1}, 1)
	if got := disrupted(nc, "spot_interrupted") - disruptedBefore; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=spot_interrupted} grew by %v, want 1", got)
	}
}

// Each message kind that takes the instance away deletes the NodeClaim with
// its event; none marks an offering unavailable.
func TestInstanceGoingAway(t *testing.T) {
	for _, tc := range []struct {
		state, kind, reason string
		body                func(id string) string
	}{
		{"stopping", "instance_stopped", interruption.ReasonInstanceStopping, func(id string) string { return stateChange(id, "stopping") }},
		{"stopped", "instance_stopped", interruption.ReasonInstanceStopping, func(id string) string { return stateChange(id, "stopped") }},
		{"shutting-down", "instance_terminated", interruption.ReasonInstanceTerminating, func(id string) string { return stateChange(id, "shutting-down") }},
		{"terminated", "instance_terminated", interruption.ReasonInstanceTerminating, func(id string) string { return stateChange(id, "terminated") }},
		{"scheduled-change", "scheduled_change", interruption.ReasonInstanceUnhealthy, func(id string) string { return scheduledChange(id) }},
		{"capacity-reservation", "capacity_reservation_interrupted", interruption.ReasonCapacityReservationInstanceInterrupted, func(id string) string {
			return event("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", `{"instance-id":"`+id+`"}`)
		}},
	} {
		t.Run(tc.state, func(t *testing.T) {
			f := setup(t, false)
			in := instance{name: "od-" + tc.state, id: "i-0ondemand" + fmt.Sprintf("%07d", len(tc.state)), instanceType: "c5.xlarge", zone: "us-west-2c", capacityType: v1.CapacityTypeOnDemand}
			nc, node := f.launched(t, in)
			before := snapshot(t)

			f.send(t, tc.body(in.id))
			f.expectQueueEmpty(t)

			expectDeleting(t, f.ctx, nc)
			expectEvent(t, nc, tc.reason)
			expectEvent(t, node, tc.reason)
			expectEvent(t, nc, interruption.ReasonTerminatingOnInterruption)
			expectCounted(t, before, map[string]float64{tc.kind: 1}, 1)
			for _, ct := range []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand} {
				if f.unavailable.IsUnavailable(ct, "c5.xlarge", "us-west-2c") {
					t.Errorf("%s c5.xlarge marked unavailable on a %s message", ct, tc.kind)
				}
			}
		})
	}
}

// A scheduled change naming several instances deletes each of their NodeClaims.
func TestScheduledChangeSeveralInstances(t *testing.T) {
	f := setup(t, false)
	a := instance{name: "sched-a", id: "i-0sched0000000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeOnDemand}
	b := instance{name: "sched-b", id: "i-0sched0000000002", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeOnDemand}
	ncA, _ := f.launched(t, a)
	ncB, _ := f.launched(t, b)
	f.send(t, scheduledChange(a.id, b.id, "i-0notours00000001"))
	f.expectQueueEmpty(t)
	expectDeleting(t, f.ctx, ncA)
	expectDeleting(t, f.ctx, ncB)
}

// A rebalance recommendation is an event only.
func TestRebalanceRecommendation(t *testing.T) {
	f := setup(t, false)
	in := instance{name: "rebalance-1", id: "i-0rebal0000000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeSpot}
	nc, node := f.launched(t, in)
	before := snapshot(t)

	f.send(t, event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"`+in.id+`"}`))
	f.expectQueueEmpty(t)

	expectEvent(t, nc, interruption.ReasonSpotRebalanceRecommendation)
	expectEvent(t, node, interruption.ReasonSpotRebalanceRecommendation)
	// The message is deleted only after it was acted on: nothing more comes.
	expectNotDeleting(t, f.ctx, nc)
	if f.unavailable.IsUnavailable(v1.CapacityTypeSpot, "m5.large", "us-west-2a") {
		t.Error("a rebalance recommendation marked the offering unavailable")
	}
	expectCounted(t, before, map[string]float64{"rebalance_recommendation": 1}, 1)
}

// Messages about instances that are not the cluster's, of kinds that need no
// action, and bodies that are not events are deleted and counted, and touch
// nothing.
func TestIgnoredMessagesAreDeleted(t *testing.T) {
	f := setup(t, false)
	in := instance{name: "bystander", id: "i-0bystander000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeSpot}
	nc, _ := f.launched(t, in)
	before := snapshot(t)

	f.send(t, spotWarning("i-0notours00000001"))                                // spot_interrupted, not ours
	f.send(t, stateChange("i-0notours00000002", "terminated"))                  // instance_terminated, not ours
	f.send(t, stateChange(in.id, "running"))                                    // no_op
	f.send(t, event("aws.ec2", "EC2 AMI State Change", `{"ImageId":"ami-1"}`))  // no_op
	f.send(t, "not json at all")                                                // unparsable
	f.send(t, event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{}`)) // unparsable: no instance id
	f.expectQueueEmpty(t)

	expectNotDeleting(t, f.ctx, nc)
	if f.unavailable.IsUnavailable(v1.CapacityTypeSpot, "m5.large", "us-west-2a") {
		t.Error("an offering was marked unavailable")
	}
	expectCounted(t, before, map[string]float64{"spot_interrupted": 1, "instance_terminated": 1, "no_op": 2, interruption.MessageTypeUnparsable: 2}, 6)
	if !f.logs.contains("deleting unparsable interruption message") {
		t.Error("unparsable messages were not logged")
	}
}

// A NodeClaim already being deleted is not deleted or counted again, but
// still gets the event of the message (e.g. the terminated notification that
// follows a spot warning).
func TestAlreadyDeletingNodeClaim(t *testing.T) {
	f := setup(t, false)
	in := instance{name: "deleting-1", id: "i-0deleting0000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeSpot}
	nc, _ := f.launched(t, in)
	ExpectDeleted(f.ctx, t, e.Client, nc)
	cur := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	Eventually(t, 30*time.Second, func() error {
		c := &v1.NodeClaim{}
		if err := f.kube.Get(f.ctx, clientKey(nc.Name), c); err != nil {
			return err
		}
		if c.DeletionTimestamp == nil {
			return fmt.Errorf("cache has not seen the deletion")
		}
		return nil
	})
	before := disrupted(cur, "instance_terminated")
	f.send(t, stateChange(in.id, "terminated"))
	f.expectQueueEmpty(t)
	expectEvent(t, cur, interruption.ReasonInstanceTerminating)
	if got := disrupted(cur, "instance_terminated") - before; got != 0 {
		t.Errorf("a NodeClaim already being deleted was counted as disrupted again (%v)", got)
	}
}

// A missing queue is a logged error naming it and retried with backoff; the
// controller handles messages once the queue exists.
func TestMissingQueueIsRetried(t *testing.T) {
	f := setup(t, true)
	Eventually(t, 30*time.Second, func() error {
		if !f.logs.contains(`interruption queue \"` + queueName + `\" does not exist`) {
			return fmt.Errorf("no error logged naming the queue")
		}
		return nil
	})
	// Retried, not given up: several lookups so far.
	Eventually(t, 30*time.Second, func() error {
		if n := f.aws.Calls("sqs", "GetQueueUrl"); n < 3 {
			return fmt.Errorf("GetQueueUrl called %d times", n)
		}
		return nil
	})
	in := instance{name: "late-queue", id: "i-0latequeue000001", instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeOnDemand}
	nc, _ := f.launched(t, in)
	if _, err := f.aws.CreateQueue(queueName); err != nil {
		t.Fatal(err)
	}
	f.send(t, stateChange(in.id, "stopping"))
	f.expectQueueEmpty(t)
	expectDeleting(t, f.ctx, nc)
}

// Without the manager's indexes (a direct client), one pass lists NodeClaims
// and Nodes once for the batch and acts the same.
func TestReconcileWithoutIndexes(t *testing.T) {
	f := setup(t, false) // the managed controller, for the cache-aware launched()
	in := instance{name: "direct-1", id: "i-0direct000000001", instanceType: "m5.xlarge", zone: "us-west-2d", capacityType: v1.CapacityTypeSpot}
	nc, _ := f.launched(t, in)

	// A second, unmanaged controller on another queue of the same emulator.
	if _, err := f.aws.CreateQueue("direct"); err != nil {
		t.Fatal(err)
	}
	cfg := awstest.Config(f.aws)
	httpclient.Configure(&cfg)
	c := interruption.NewController(e.Client, awssqs.NewProvider(sqs.NewFromConfig(cfg), "direct"), f.unavailable, nil, clock.RealClock{}, interruption.Options{})
	for _, body := range []string{spotWarning(in.id), spotWarning("i-0notours00000009")} {
		if _, err := f.aws.SendQueueMessage("direct", body); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.Reconcile(f.ctx)
	if err != nil || n != 2 {
		t.Fatalf("Reconcile = %d, %v; want 2 messages handled", n, err)
	}
	if visible, inFlight := f.aws.QueueDepth("direct"); visible+inFlight != 0 {
		t.Fatalf("%d messages left", visible+inFlight)
	}
	expectDeleting(t, f.ctx, nc)
	if !f.unavailable.IsUnavailable(v1.CapacityTypeSpot, "m5.xlarge", "us-west-2d") {
		t.Error("offering not marked unavailable")
	}
}
