package messages_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption/messages"
)

func event(source, detailType, detail string) string {
	return `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"` + detailType + `","source":"` + source + `",` +
		`"account":"123456789012","time":"2026-11-24T15:00:00Z","region":"us-west-2",` +
		`"resources":["arn:aws:ec2:us-west-2a:instance/i-0123"],"detail":` + detail + `}`
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		kind  messages.Kind
		ids   []string
		state string
	}{
		{"spot interruption", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-id":"i-0123","instance-action":"terminate"}`),
			messages.SpotInterruptionKind, []string{"i-0123"}, ""},
		{"rebalance", event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"i-0123"}`),
			messages.RebalanceRecommendationKind, []string{"i-0123"}, ""},
		{"capacity reservation", event("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", `{"instance-id":"i-0123"}`),
			messages.CapacityReservationInterruptionKind, []string{"i-0123"}, ""},
		{"stopping", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"stopping"}`),
			messages.InstanceStoppedKind, []string{"i-0123"}, "stopping"},
		{"stopped", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"stopped"}`),
			messages.InstanceStoppedKind, []string{"i-0123"}, "stopped"},
		{"shutting-down", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"shutting-down"}`),
			messages.InstanceTerminatedKind, []string{"i-0123"}, "shutting-down"},
		{"terminated", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"terminated"}`),
			messages.InstanceTerminatedKind, []string{"i-0123"}, "terminated"},
		{"running is a no-op", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"running"}`),
			messages.NoOpKind, nil, "running"},
		{"pending is a no-op", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123","state":"pending"}`),
			messages.NoOpKind, nil, "pending"},
		{"scheduled change", event("aws.health", "AWS Health Event", `{"eventArn":"arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/x","service":"EC2",`+
			`"eventTypeCode":"AWS_EC2_INSTANCE_STOP_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Tue, 24 Nov 2026 15:00:00 GMT",`+
			`"affectedEntities":[{"entityValue":"i-0123"},{"entityValue":"i-0456"}]}`),
			messages.ScheduledChangeKind, []string{"i-0123", "i-0456"}, ""},
		{"health issue is a no-op", event("aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-0123"}]}`),
			messages.NoOpKind, nil, ""},
		{"health of another service is a no-op", event("aws.health", "AWS Health Event", `{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"db-1"}]}`),
			messages.NoOpKind, nil, ""},
		{"unknown detail type", event("aws.ec2", "EC2 AMI State Change", `{"ImageId":"ami-1"}`), messages.NoOpKind, nil, ""},
		{"unknown source", event("aws.s3", "Object Created", `{}`), messages.NoOpKind, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := messages.Parse(tc.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.Kind != tc.kind || !slices.Equal(m.InstanceIDs, tc.ids) || m.State != tc.state {
				t.Errorf("got kind %q ids %v state %q, want %q %v %q", m.Kind, m.InstanceIDs, m.State, tc.kind, tc.ids, tc.state)
			}
			if m.EventID != "7bf73129-1428-4cd3-a780-95db273d1602" || !m.Time.Equal(time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)) {
				t.Errorf("envelope not read: id %q time %v", m.EventID, m.Time)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", "", "empty message body"},
		{"not json", "hello", "not an EventBridge event"},
		{"json array", "[1,2]", "not an EventBridge event"},
		{"no source", `{"detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`, `"source" and "detail-type" are required`},
		{"bad time", `{"source":"aws.ec2","detail-type":"x","time":"yesterday"}`, "not an EventBridge event"},
		{"spot without detail", `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","id":"e1"}`, `"detail" is missing`},
		{"spot without instance", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `{"instance-action":"terminate"}`), `"detail.instance-id" ""`},
		{"spot detail wrong type", event("aws.ec2", "EC2 Spot Instance Interruption Warning", `"i-0123"`), `"detail" is malformed`},
		{"rebalance bad id", event("aws.ec2", "EC2 Instance Rebalance Recommendation", `{"instance-id":"vol-1"}`), `"detail.instance-id" "vol-1"`},
		{"state change without state", event("aws.ec2", "EC2 Instance State-change Notification", `{"instance-id":"i-0123"}`), `"detail.state" is missing`},
		{"state change without instance", event("aws.ec2", "EC2 Instance State-change Notification", `{"state":"terminated"}`), `"detail.instance-id"`},
		{"scheduled change without entities", event("aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"scheduledChange"}`), `"detail.affectedEntities" names no instance`},
		{"scheduled change bad entity", event("aws.health", "AWS Health Event", `{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-1"},{"entityValue":"arn:x"}]}`),
			`"detail.affectedEntities[1].entityValue"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := messages.Parse(tc.body)
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want an error containing %q", m, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
