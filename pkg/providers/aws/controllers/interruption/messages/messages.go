// Package messages parses the EventBridge events the interruption queue
// carries into Messages: what happened (Kind) to which EC2 instances. It is
// pure: no clients, no clock.
//
// An SQS message body is the EventBridge event itself:
//
//	{"version":"0","id":"…","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",
//	 "account":"…","time":"2026-11-24T15:00:00Z","region":"us-west-2","resources":[…],
//	 "detail":{"instance-id":"i-0123","instance-action":"terminate"}}
//
// Parse picks a parser by (source, detail-type). An event of no known kind is
// a NoOp message, not an error (the queue may be shared with other rules); a
// body that is not an event, or a known kind whose detail lacks what the kind
// needs, is an error naming the field.
package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what a message reports; its value is the message_type label of
// karpenter_interruption_received_messages_total (upstream's values).
type Kind string

const (
	NoOpKind                            Kind = "no_op"
	SpotInterruptionKind                Kind = "spot_interrupted"
	RebalanceRecommendationKind         Kind = "rebalance_recommendation"
	ScheduledChangeKind                 Kind = "scheduled_change"
	InstanceStoppedKind                 Kind = "instance_stopped"
	InstanceTerminatedKind              Kind = "instance_terminated"
	CapacityReservationInterruptionKind Kind = "capacity_reservation_interrupted"
	// The kinds of EC2 status checks (DescribeInstanceStatus), which the
	// instance status controller polls: none comes from the queue.
	InstanceStatusKind Kind = "instance_status"
	SystemStatusKind   Kind = "system_status"
	EventStatusKind    Kind = "event_status"
)

// EventBridge sources and detail types the parsers recognise.
const (
	SourceEC2    = "aws.ec2"
	SourceHealth = "aws.health"

	DetailTypeSpotInterruption    = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalance           = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange         = "EC2 Instance State-change Notification"
	DetailTypeHealth              = "AWS Health Event"
	DetailTypeCapacityReservation = "EC2 Capacity Reservation Instance Interruption Warning"
	healthServiceEC2              = "EC2"
	healthCategoryScheduledChange = "scheduledChange"
)

// Message is one parsed event.
type Message struct {
	Kind Kind
	// EventID, Source, DetailType and Time are the event's envelope.
	EventID    string
	Source     string
	DetailType string
	Time       time.Time
	// InstanceIDs are the EC2 instances the event is about (none for NoOp).
	InstanceIDs []string
	// State is the new instance state of a state-change notification.
	State string
}

// envelope is the part of an EventBridge event every kind shares.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// stoppedStates and terminatedStates are the state changes that take an
// instance away; other states (pending, running) are NoOp.
var (
	stoppedStates    = map[string]bool{"stopping": true, "stopped": true}
	terminatedStates = map[string]bool{"shutting-down": true, "terminated": true}
)

// Parse reads one SQS message body.
func Parse(body string) (Message, error) {
	if strings.TrimSpace(body) == "" {
		return Message{}, errors.New("empty message body")
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Message{}, fmt.Errorf("message body is not an EventBridge event: %w", err)
	}
	if env.Source == "" || env.DetailType == "" {
		return Message{}, errors.New(`message body is not an EventBridge event: "source" and "detail-type" are required`)
	}
	m := Message{Kind: NoOpKind, EventID: env.ID, Source: env.Source, DetailType: env.DetailType, Time: env.Time}
	var err error
	switch {
	case env.Source == SourceEC2 && env.DetailType == DetailTypeSpotInterruption:
		m.Kind = SpotInterruptionKind
		m.InstanceIDs, err = instanceID(env)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeRebalance:
		m.Kind = RebalanceRecommendationKind
		m.InstanceIDs, err = instanceID(env)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeCapacityReservation:
		m.Kind = CapacityReservationInterruptionKind
		m.InstanceIDs, err = instanceID(env)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeStateChange:
		err = parseStateChange(env, &m)
	case env.Source == SourceHealth && env.DetailType == DetailTypeHealth:
		err = parseHealth(env, &m)
	}
	if err != nil {
		return Message{}, fmt.Errorf("%s event %s: %w", env.DetailType, env.ID, err)
	}
	return m, nil
}

func detail(env envelope, into any) error {
	if len(env.Detail) == 0 || string(env.Detail) == "null" {
		return errors.New(`"detail" is missing`)
	}
	if err := json.Unmarshal(env.Detail, into); err != nil {
		return fmt.Errorf(`"detail" is malformed: %w`, err)
	}
	return nil
}

// instanceID reads detail.instance-id, which the EC2 instance events carry.
func instanceID(env envelope) ([]string, error) {
	var d struct {
		InstanceID string `json:"instance-id"`
	}
	if err := detail(env, &d); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(d.InstanceID, "i-") {
		return nil, fmt.Errorf(`"detail.instance-id" %q is not an instance ID`, d.InstanceID)
	}
	return []string{d.InstanceID}, nil
}

func parseStateChange(env envelope, m *Message) error {
	var d struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	}
	if err := detail(env, &d); err != nil {
		return err
	}
	if !strings.HasPrefix(d.InstanceID, "i-") {
		return fmt.Errorf(`"detail.instance-id" %q is not an instance ID`, d.InstanceID)
	}
	if d.State == "" {
		return errors.New(`"detail.state" is missing`)
	}
	m.State = d.State
	switch {
	case stoppedStates[d.State]:
		m.Kind = InstanceStoppedKind
	case terminatedStates[d.State]:
		m.Kind = InstanceTerminatedKind
	default:
		return nil // pending, running: nothing to do
	}
	m.InstanceIDs = []string{d.InstanceID}
	return nil
}

// parseHealth accepts EC2 scheduled changes (instance retirement, reboot,
// maintenance); other AWS Health events are NoOp.
func parseHealth(env envelope, m *Message) error {
	var d struct {
		Service           string `json:"service"`
		EventTypeCategory string `json:"eventTypeCategory"`
		EventTypeCode     string `json:"eventTypeCode"`
		AffectedEntities  []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	if err := detail(env, &d); err != nil {
		return err
	}
	if d.Service != healthServiceEC2 || d.EventTypeCategory != healthCategoryScheduledChange {
		return nil
	}
	m.Kind = ScheduledChangeKind
	for i, e := range d.AffectedEntities {
		if !strings.HasPrefix(e.EntityValue, "i-") {
			return fmt.Errorf(`"detail.affectedEntities[%d].entityValue" %q is not an instance ID`, i, e.EntityValue)
		}
		m.InstanceIDs = append(m.InstanceIDs, e.EntityValue)
	}
	if len(m.InstanceIDs) == 0 {
		return errors.New(`"detail.affectedEntities" names no instance`)
	}
	return nil
}
