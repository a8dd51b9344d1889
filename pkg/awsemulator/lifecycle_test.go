package awsemulator_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// userDataTemplate creates a launch template like launchWorld's, on the same AMI,
// security group and profile, with the given plain-text user data and a 50 GiB root volume.
func userDataTemplate(t *testing.T, c *clients, name, userData string) string {
	t.Helper()
	base := c.e.LaunchTemplates()[0].Data
	_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(base["ImageId"]),
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			SecurityGroupIds:   []string{base["SecurityGroupId.1"]},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(base["IamInstanceProfile.Name"])},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"),
				Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(50), VolumeType: ec2types.VolumeTypeGp3}}},
		},
	})
	ok(t, err)
	return name
}

func launchOne(t *testing.T, c *clients, lt string, capacityType ec2types.DefaultTargetCapacityType, instanceType string, subnets []ec2types.Subnet) string {
	t.Helper()
	out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, capacityType, 1, []string{instanceType}, subnets[:1]))
	ok(t, err)
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("fleet launched %+v, errors %+v", out.Instances, out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

func stateOf(t *testing.T, c *clients, id string) string {
	t.Helper()
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	return string(out.Reservations[0].Instances[0].State.Name)
}

type event struct {
	Source     string            `json:"source"`
	DetailType string            `json:"detail-type"`
	Account    string            `json:"account"`
	Region     string            `json:"region"`
	Time       string            `json:"time"`
	Resources  []string          `json:"resources"`
	Detail     map[string]any    `json:"detail"`
	Raw        map[string]string `json:"-"`
}

// drain receives every visible message of the queue, in order.
func drain(t *testing.T, c *clients, queueURL string) []event {
	t.Helper()
	var out []event
	for {
		res, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10})
		ok(t, err)
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			var ev event
			if err := json.Unmarshal([]byte(*m.Body), &ev); err != nil {
				t.Fatalf("message body is not an event: %v\n%s", err, *m.Body)
			}
			out = append(out, ev)
			_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
			ok(t, err)
		}
	}
}

func summary(evs []event) []string {
	var out []string
	for _, ev := range evs {
		s := ev.DetailType
		if st, ok := ev.Detail["state"]; ok {
			s += ":" + st.(string)
		}
		out = append(out, s)
	}
	return out
}

func TestBootDelayAndSpotInterruptionEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC))
	e := awsemulator.StartForTest(t, awsemulator.Options{BootDelay: 2 * time.Second, Clock: clk})
	c := newClients(e)
	queueURL, err := e.CreateQueue("karpenter-demo")
	ok(t, err)
	e.SetEventQueue("karpenter-demo")
	lt, subnets := launchWorld(t, c, "x86_64")

	id := launchOne(t, c, lt, ec2types.DefaultTargetCapacityTypeSpot, "m5.large", subnets)
	if st := stateOf(t, c, id); st != "pending" {
		t.Fatalf("just launched: %s, want pending", st)
	}
	clk.Step(2*time.Second - time.Millisecond)
	if st := stateOf(t, c, id); st != "pending" {
		t.Fatalf("before the boot delay: %s, want pending", st)
	}
	clk.Step(time.Millisecond)
	if st := stateOf(t, c, id); st != "running" {
		t.Fatalf("after the boot delay: %s, want running", st)
	}
	if err := e.InterruptSpot(id, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	clk.Step(2*time.Minute - time.Second)
	if st := stateOf(t, c, id); st != "running" {
		t.Fatalf("within the notice: %s, want running", st)
	}
	clk.Step(time.Second)
	if st := stateOf(t, c, id); st != "shutting-down" {
		t.Fatalf("notice over: %s, want shutting-down", st)
	}
	clk.Step(2 * time.Second)
	if st := stateOf(t, c, id); st != "terminated" {
		t.Fatalf("after shutting down: %s, want terminated", st)
	}

	evs := drain(t, c, queueURL)
	want := []string{
		awsemulator.DetailStateChange + ":pending", awsemulator.DetailStateChange + ":running",
		awsemulator.DetailSpotInterruption,
		awsemulator.DetailStateChange + ":shutting-down", awsemulator.DetailStateChange + ":terminated",
	}
	if got := summary(evs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q\nwant %q", got, want)
	}
	warning := evs[2]
	if warning.Source != "aws.ec2" || warning.Detail["instance-id"] != id || warning.Detail["instance-action"] != "terminate" ||
		warning.Account != "123456789012" || warning.Region != "us-west-2" || warning.Time != "2026-11-24T15:00:02Z" ||
		len(warning.Resources) != 1 || !strings.HasSuffix(warning.Resources[0], ":instance/"+id) {
		t.Fatalf("spot warning %+v", warning)
	}
	if err := e.InterruptSpot(id, time.Minute); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("interrupting a terminated instance: %v", err)
	}
}

func TestTerminateWithZeroBootDelayAndControlEvents(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	c := newClients(e)
	lt, subnets := launchWorld(t, c, "x86_64")
	id := launchOne(t, c, lt, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", subnets)
	// No queue yet: nothing is sent and nothing fails.
	if st := stateOf(t, c, id); st != "running" {
		t.Fatalf("with BootDelay 0 an instance runs at its first observation; got %s", st)
	}
	queueURL, err := e.CreateQueue("events")
	ok(t, err)
	e.SetEventQueue("events")

	post := func(body string) (int, string) {
		res, err := http.Post(e.Endpoint()+"/_emulator/events", "application/json", strings.NewReader(body))
		ok(t, err)
		defer res.Body.Close()
		var m map[string]string
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m["error"]
	}
	if code, msg := post(`{"kind":"rebalance","instanceId":"` + id + `"}`); code != 200 {
		t.Fatalf("rebalance: %d %s", code, msg)
	}
	if code, msg := post(`{"kind":"scheduled-change","instanceId":"` + id + `","noticeSeconds":3600}`); code != 200 {
		t.Fatalf("scheduled change: %d %s", code, msg)
	}
	if code, msg := post(`{"kind":"spot-interruption","instanceId":"` + id + `"}`); code != 400 || !strings.Contains(msg, "not spot") {
		t.Fatalf("spot interruption of an on-demand instance: %d %s", code, msg)
	}
	if code, msg := post(`{"kind":"meteor","instanceId":"` + id + `"}`); code != 400 || !strings.Contains(msg, "meteor") {
		t.Fatalf("unknown kind: %d %s", code, msg)
	}
	_, err = c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	if st := stateOf(t, c, id); st != "terminated" {
		t.Fatalf("terminated at the next observation with BootDelay 0; got %s", st)
	}
	evs := drain(t, c, queueURL)
	want := []string{awsemulator.DetailRebalance, awsemulator.DetailHealth,
		awsemulator.DetailStateChange + ":shutting-down", awsemulator.DetailStateChange + ":terminated"}
	if got := summary(evs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q\nwant %q", got, want)
	}
	health := evs[1]
	entities, _ := health.Detail["affectedEntities"].([]any)
	if health.Source != "aws.health" || health.Detail["eventTypeCategory"] != "scheduledChange" || health.Detail["service"] != "EC2" ||
		health.Detail["eventTypeCode"] != "AWS_EC2_INSTANCE_STOP_SCHEDULED" || len(entities) != 1 ||
		entities[0].(map[string]any)["entityValue"] != id || !strings.HasSuffix(health.Detail["startTime"].(string), " GMT") {
		t.Fatalf("health event %+v", health)
	}
}
