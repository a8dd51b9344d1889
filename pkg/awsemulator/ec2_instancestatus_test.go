package awsemulator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func seedRunning(t *testing.T, c *clients, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		in, _, err := c.e.SeedRunningInstance(awsemulator.PreexistingInstance{InstanceType: "m5.large"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	return ids
}

func statusFilter(name string, values ...string) []ec2types.Filter {
	return []ec2types.Filter{{Name: aws.String(name), Values: values}}
}

func statusIDs(out *ec2.DescribeInstanceStatusOutput) []string {
	var ids []string
	for _, s := range out.InstanceStatuses {
		ids = append(ids, aws.ToString(s.InstanceId))
	}
	return ids
}

// DescribeInstanceStatus answers AWS's shapes through the SDK: passing checks
// by default, a failed check as an impaired summary with its impairedSince,
// scheduled events, the status and event filters, IncludeAllInstances, and
// EC2's errors.
func TestDescribeInstanceStatus(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ids := seedRunning(t, c, 4)
	healthy, impaired, system, retiring := ids[0], ids[1], ids[2], ids[3]
	since := time.Now().Add(-5 * time.Minute).Truncate(time.Second)
	ok(t, c.e.SetInstanceHealth(impaired, awsemulator.InstanceHealth{Instance: awsemulator.StatusCheck{Status: awsemulator.CheckFailed, ImpairedSince: since}}))
	ok(t, c.e.SetInstanceHealth(system, awsemulator.InstanceHealth{System: awsemulator.StatusCheck{Status: awsemulator.CheckFailed}}))
	ok(t, c.e.SetInstanceHealth(retiring, awsemulator.InstanceHealth{Events: []awsemulator.InstanceEvent{{Code: "instance-retirement"}}}))

	out, err := c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{healthy}})
	ok(t, err)
	if len(out.InstanceStatuses) != 1 {
		t.Fatalf("got %d statuses for one instance", len(out.InstanceStatuses))
	}
	st := out.InstanceStatuses[0]
	if st.InstanceState == nil || st.InstanceState.Name != ec2types.InstanceStateNameRunning || aws.ToInt32(st.InstanceState.Code) != 16 || aws.ToString(st.AvailabilityZone) == "" {
		t.Fatalf("state %+v zone %q", st.InstanceState, aws.ToString(st.AvailabilityZone))
	}
	for name, sum := range map[string]*ec2types.InstanceStatusSummary{"instance": st.InstanceStatus, "system": st.SystemStatus} {
		if sum == nil || sum.Status != ec2types.SummaryStatusOk || len(sum.Details) != 1 ||
			sum.Details[0].Name != ec2types.StatusNameReachability || sum.Details[0].Status != ec2types.StatusTypePassed || sum.Details[0].ImpairedSince != nil {
			t.Fatalf("healthy %s status %+v", name, sum)
		}
	}
	if st.AttachedEbsStatus == nil || st.AttachedEbsStatus.Status != ec2types.SummaryStatusOk || len(st.Events) != 0 {
		t.Fatalf("healthy ebs status %+v events %+v", st.AttachedEbsStatus, st.Events)
	}

	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: statusFilter("instance-status.status", "impaired")})
	ok(t, err)
	if got := statusIDs(out); len(got) != 1 || got[0] != impaired {
		t.Fatalf("instance-status.status=impaired matched %v, want [%s]", got, impaired)
	}
	d := out.InstanceStatuses[0].InstanceStatus
	if d.Status != ec2types.SummaryStatusImpaired || d.Details[0].Status != ec2types.StatusTypeFailed || !aws.ToTime(d.Details[0].ImpairedSince).Equal(since) {
		t.Fatalf("impaired instance status %+v (impairedSince %v, want %v)", d, aws.ToTime(d.Details[0].ImpairedSince), since)
	}
	if out.InstanceStatuses[0].SystemStatus.Status != ec2types.SummaryStatusOk {
		t.Fatalf("system status of an instance-impaired instance is %s", out.InstanceStatuses[0].SystemStatus.Status)
	}

	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: statusFilter("system-status.status", "impaired")})
	ok(t, err)
	if got := statusIDs(out); len(got) != 1 || got[0] != system || out.InstanceStatuses[0].SystemStatus.Details[0].ImpairedSince == nil {
		t.Fatalf("system-status.status=impaired matched %v (%+v), want [%s] with impairedSince", got, out.InstanceStatuses, system)
	}

	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: statusFilter("event.code", "instance-reboot", "instance-retirement")})
	ok(t, err)
	if got := statusIDs(out); len(got) != 1 || got[0] != retiring {
		t.Fatalf("event.code matched %v, want [%s]", got, retiring)
	}
	ev := out.InstanceStatuses[0].Events
	if len(ev) != 1 || ev[0].Code != ec2types.EventCodeInstanceRetirement || aws.ToString(ev[0].InstanceEventId) == "" ||
		aws.ToString(ev[0].Description) == "" || ev[0].NotBefore == nil || ev[0].NotAfter == nil {
		t.Fatalf("events %+v", ev)
	}

	// Two filters are ANDed.
	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: append(statusFilter("instance-status.status", "impaired"), statusFilter("system-status.status", "impaired")...)})
	ok(t, err)
	if len(out.InstanceStatuses) != 0 {
		t.Fatalf("instance AND system impaired matched %v", statusIDs(out))
	}

	// Recovered: the check passes again.
	ok(t, c.e.SetInstanceHealth(impaired, awsemulator.InstanceHealth{}))
	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: statusFilter("instance-status.status", "impaired")})
	ok(t, err)
	if len(out.InstanceStatuses) != 0 {
		t.Fatalf("recovered instance still impaired: %v", statusIDs(out))
	}

	// Only running instances, unless IncludeAllInstances.
	ok(t, c.e.SetInstanceState(healthy, "stopped"))
	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{})
	ok(t, err)
	if got := statusIDs(out); len(got) != 3 || strings.Contains(strings.Join(got, ","), healthy) {
		t.Fatalf("without IncludeAllInstances got %v, want the 3 running ones", got)
	}
	out, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), InstanceIds: []string{healthy}})
	ok(t, err)
	if len(out.InstanceStatuses) != 1 || out.InstanceStatuses[0].InstanceState.Name != ec2types.InstanceStateNameStopped ||
		out.InstanceStatuses[0].InstanceStatus.Status != ec2types.SummaryStatusNotApplicable || len(out.InstanceStatuses[0].InstanceStatus.Details) != 0 {
		t.Fatalf("stopped instance with IncludeAllInstances: %+v", out.InstanceStatuses)
	}

	_, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: statusFilter("instance-status.colour", "red")})
	expectError(t, err, "InvalidParameterValue", 400)
	_, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{"i-0000000000000dead"}})
	expectError(t, err, "InvalidInstanceID.NotFound", 400)
	_, err = c.ec2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{system}, MaxResults: aws.Int32(5)})
	expectError(t, err, "InvalidParameterCombination", 400)
	if err := c.e.SetInstanceHealth(system, awsemulator.InstanceHealth{Events: []awsemulator.InstanceEvent{{Code: "meteor-strike"}}}); err == nil {
		t.Fatal("an unknown event code was accepted")
	}
}

// MaxResults and NextToken page through the answer; the SDK's paginator
// collects every instance once.
func TestDescribeInstanceStatusPagination(t *testing.T) {
	c := start(t)
	ids := seedRunning(t, c, 12)
	pager := ec2.NewDescribeInstanceStatusPaginator(c.ec2, &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)})
	seen, pages := map[string]bool{}, 0
	for pager.HasMorePages() {
		out, err := pager.NextPage(context.Background())
		ok(t, err)
		pages++
		for _, id := range statusIDs(out) {
			if seen[id] {
				t.Fatalf("%s answered twice", id)
			}
			seen[id] = true
		}
	}
	if pages != 3 || len(seen) != len(ids) {
		t.Fatalf("%d pages with %d instances, want 3 pages with %d", pages, len(seen), len(ids))
	}
	_, err := c.ec2.DescribeInstanceStatus(context.Background(), &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(4)})
	expectError(t, err, "InvalidParameterValue", 400)
}

// The raw query-protocol answer has EC2's element names, and the control
// endpoint sets an instance's checks.
func TestDescribeInstanceStatusWireAndControl(t *testing.T) {
	c := start(t)
	id := seedRunning(t, c, 1)[0]
	resp, err := http.Post(c.e.Endpoint()+"/_emulator/instance-status", "application/json",
		strings.NewReader(`{"instanceId":"`+id+`","systemStatus":"failed","impairedSeconds":300,"events":[{"code":"system-maintenance","notBeforeSeconds":60}]}`))
	ok(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control endpoint answered %d: %s", resp.StatusCode, body)
	}

	var raw string
	out, err := c.ec2.DescribeInstanceStatus(context.Background(), &ec2.DescribeInstanceStatusInput{InstanceIds: []string{id}},
		func(o *ec2.Options) { o.HTTPClient = recordBody(awsemulator.HTTPClient(), &raw) })
	ok(t, err)
	for _, want := range []string{
		"<DescribeInstanceStatusResponse", "<instanceStatusSet><item><instanceId>" + id + "</instanceId>",
		"<instanceState><code>16</code><name>running</name></instanceState>",
		"<systemStatus><status>impaired</status><details><item><name>reachability</name><status>failed</status><impairedSince>",
		"<instanceStatus><status>ok</status><details><item><name>reachability</name><status>passed</status></item></details></instanceStatus>",
		"<attachedEbsStatus><status>ok</status>",
		"<eventsSet><item><instanceEventId>instance-event-", "<code>system-maintenance</code>", "<notBefore>",
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("answer lacks %s:\n%s", want, raw)
		}
	}
	st := out.InstanceStatuses[0]
	if impairedFor := time.Since(aws.ToTime(st.SystemStatus.Details[0].ImpairedSince)); impairedFor < 299*time.Second || impairedFor > time.Hour {
		t.Errorf("system check impaired for %v, want about 5m", impairedFor)
	}
	if until := time.Until(aws.ToTime(st.Events[0].NotBefore)); until < 50*time.Second || until > 70*time.Second {
		t.Errorf("event starts in %v, want about 1m", until)
	}

	resp, err = http.Post(c.e.Endpoint()+"/_emulator/instance-status", "application/json", strings.NewReader(`{"instanceId":"`+id+`","instanceStatus":"broken"}`))
	ok(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown check status answered %d", resp.StatusCode)
	}
}

// recordBody wraps hc so that the last response body is kept in *dst.
func recordBody(hc *http.Client, dst *string) ec2.HTTPClient {
	return doFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := hc.Do(r)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		*dst = string(b)
		resp.Body = io.NopCloser(strings.NewReader(*dst))
		return resp, nil
	})
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
