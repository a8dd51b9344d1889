package instancestatus_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancestatus"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

func setup(t *testing.T) (*awsemulator.Emulator, *instancestatus.Provider, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	e := awsemulator.StartForTest(t, awsemulator.Options{Clock: clk})
	return e, instancestatus.NewProvider(ec2.NewFromConfig(awstest.Config(e)), clk), clk
}

func running(t *testing.T, e *awsemulator.Emulator, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		in, _, err := e.SeedRunningInstance(awsemulator.PreexistingInstance{InstanceType: "m5.large"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	return ids
}

func set(t *testing.T, e *awsemulator.Emulator, id string, h awsemulator.InstanceHealth) {
	t.Helper()
	if err := e.SetInstanceHealth(id, h); err != nil {
		t.Fatal(err)
	}
}

func failedSince(at time.Time) awsemulator.StatusCheck {
	return awsemulator.StatusCheck{Status: awsemulator.CheckFailed, ImpairedSince: at}
}

// byID lists the reported instances as "id: categories".
func byID(t *testing.T, p *instancestatus.Provider) map[string][]instancestatus.Category {
	t.Helper()
	hs, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]instancestatus.Category{}
	for _, h := range hs {
		if _, dup := out[h.InstanceID]; dup {
			t.Fatalf("%s reported twice", h.InstanceID)
		}
		cs := h.Categories()
		sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
		out[h.InstanceID] = cs
	}
	return out
}

// Failed status checks count once they have failed for the threshold;
// scheduled events count at once; attached EBS failures and passing or
// insufficient-data checks never do.
func TestListThresholdAndCategories(t *testing.T) {
	e, p, clk := setup(t)
	now := clk.Now()
	ids := running(t, e, 7)
	longImpaired, recentSystem, stopEvent, ebsOnly, both, unknown, healthy := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]
	set(t, e, longImpaired, awsemulator.InstanceHealth{Instance: failedSince(now.Add(-5 * time.Minute))})
	set(t, e, recentSystem, awsemulator.InstanceHealth{System: failedSince(now.Add(-30 * time.Second))})
	set(t, e, stopEvent, awsemulator.InstanceHealth{Events: []awsemulator.InstanceEvent{{Code: "instance-stop", NotBefore: now.Add(72 * time.Hour)}}})
	set(t, e, ebsOnly, awsemulator.InstanceHealth{AttachedEBS: failedSince(now.Add(-time.Hour))})
	set(t, e, both, awsemulator.InstanceHealth{Instance: failedSince(now.Add(-3 * time.Minute)), System: failedSince(now.Add(-4 * time.Minute))})
	set(t, e, unknown, awsemulator.InstanceHealth{Instance: awsemulator.StatusCheck{Status: awsemulator.CheckInsufficientData}})
	_ = healthy

	want := map[string][]instancestatus.Category{
		longImpaired: {instancestatus.InstanceStatus},
		stopEvent:    {instancestatus.EventStatus},
		both:         {instancestatus.InstanceStatus, instancestatus.SystemStatus},
	}
	if got := byID(t, p); !reflect.DeepEqual(got, want) {
		t.Fatalf("reported %v, want %v", got, want)
	}

	hs, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.InstanceID == both && !h.ImpairedSince.Equal(now.Add(-4*time.Minute)) {
			t.Errorf("%s impaired since %v, want the earliest check's %v", both, h.ImpairedSince, now.Add(-4*time.Minute))
		}
		if h.InstanceID == stopEvent && (len(h.Details) != 1 || h.Details[0].Name != "instance-stop") {
			t.Errorf("event details %+v", h.Details)
		}
	}

	// 90s later the system check has failed for exactly the threshold.
	clk.Step(90 * time.Second)
	want[recentSystem] = []instancestatus.Category{instancestatus.SystemStatus}
	if got := byID(t, p); !reflect.DeepEqual(got, want) {
		t.Fatalf("at the threshold reported %v, want %v", got, want)
	}
}

// An instance matching several of the three queries (instance impaired,
// system impaired, scheduled event) is reported once with every category,
// at the cost of one call per query.
func TestListDeduplicatesAcrossQueries(t *testing.T) {
	e, p, clk := setup(t)
	id := running(t, e, 1)[0]
	long := clk.Now().Add(-10 * time.Minute)
	set(t, e, id, awsemulator.InstanceHealth{Instance: failedSince(long), System: failedSince(long),
		Events: []awsemulator.InstanceEvent{{Code: "system-maintenance"}, {Code: "instance-retirement"}}})
	before := e.Calls("ec2", "DescribeInstanceStatus")
	hs, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if calls := e.Calls("ec2", "DescribeInstanceStatus") - before; calls != 3 {
		t.Errorf("%d DescribeInstanceStatus calls, want 3", calls)
	}
	if len(hs) != 1 || hs[0].InstanceID != id {
		t.Fatalf("reported %+v, want %s once", hs, id)
	}
	want := []instancestatus.Category{instancestatus.InstanceStatus, instancestatus.SystemStatus, instancestatus.EventStatus}
	if got := hs[0].Categories(); !reflect.DeepEqual(got, want) || len(hs[0].Details) != 4 {
		t.Fatalf("categories %v with %d details, want %v with 4", got, len(hs[0].Details), want)
	}
}

// Every page of every query is read.
func TestListPaginates(t *testing.T) {
	e, p, clk := setup(t)
	p.PageSize = 5
	ids := running(t, e, 13)
	long := clk.Now().Add(-10 * time.Minute)
	for _, id := range ids[:12] {
		set(t, e, id, awsemulator.InstanceHealth{Instance: failedSince(long)})
	}
	set(t, e, ids[12], awsemulator.InstanceHealth{Events: []awsemulator.InstanceEvent{{Code: "system-reboot"}}})
	before := e.Calls("ec2", "DescribeInstanceStatus")
	got := byID(t, p)
	if len(got) != 13 {
		t.Fatalf("reported %d instances, want 13: %v", len(got), got)
	}
	// 3 pages of impaired instances, 1 (empty) of system-impaired, 1 of events.
	if calls := e.Calls("ec2", "DescribeInstanceStatus") - before; calls != 5 {
		t.Errorf("%d DescribeInstanceStatus calls, want 5", calls)
	}
}

// A caller without ec2:DescribeInstanceStatus gets EC2's UnauthorizedOperation.
func TestListUnauthorized(t *testing.T) {
	e, p, _ := setup(t)
	e.DenyAction("ec2", "DescribeInstanceStatus")
	_, err := p.List(context.Background())
	if !awserr.IsUnauthorized(err) || awserr.Code(err) != "UnauthorizedOperation" {
		t.Fatalf("List error %v, want UnauthorizedOperation", fmt.Sprint(err))
	}
}
