package interruption_test

import (
	"fmt"
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// BenchmarkMessages measures how many messages per second the controller
// drains from the emulator's queue, 1,000 at a time, with 100 of the
// cluster's NodeClaims in the cache: 10% rebalance recommendations for them
// (an event each on NodeClaim and Node), 45% state changes to running for
// them (no-op), 45% spot warnings for instances that are not the cluster's.
// Nothing is deleted, so every iteration sees the same cluster. Run with
// -benchtime=3x or so; each iteration is 1,000 messages.
func BenchmarkMessages(b *testing.B) {
	f := setup(b, false)
	var ids []string
	for i := range 100 {
		in := instance{name: fmt.Sprintf("bench-%03d", i), id: fmt.Sprintf("i-0bench%010d", i), instanceType: "m5.large", zone: "us-west-2a", capacityType: v1.CapacityTypeSpot}
		f.launched(b, in)
		ids = append(ids, in.id)
	}
	bodies := make([]string, 1000)
	for i := range bodies {
		switch id := ids[i%len(ids)]; {
		case i%10 == 0:
			bodies[i] = event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"`+id+`"}`)
		case i%2 == 0:
			bodies[i] = stateChange(id, "running")
		default:
			bodies[i] = spotWarning(fmt.Sprintf("i-0notours%09d", i))
		}
	}
	before := snapshot(b)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, body := range bodies {
			f.send(b, body)
		}
		f.expectQueueEmpty(b)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(bodies))/elapsed.Seconds(), "msgs/s")
	after := snapshot(b)
	if got := after.deleted - before.deleted; got != float64(b.N*len(bodies)) {
		b.Fatalf("deleted %v messages, want %d", got, b.N*len(bodies))
	}
}
