package awsemulator

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"
)

// EventBridge: once SetEventQueue names an SQS queue, the emulator delivers there what
// an EventBridge rule for Karpenter's interruption queue would: the event JSON itself as
// the message body. State-change notifications follow every instance transition; spot
// interruption warnings, rebalance recommendations and scheduled changes are raised by
// InterruptSpot, RecommendRebalance and ScheduleChange (or POST /_emulator/events).

// Event detail types and sources as EventBridge spells them.
const (
	DetailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	DetailRebalance        = "EC2 Instance Rebalance Recommendation"
	DetailStateChange      = "EC2 Instance State-change Notification"
	DetailHealth           = "AWS Health Event"
)

type bridgeEvent struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// SetEventQueue makes the named SQS queue EventBridge's target ("" stops delivery). The
// queue need not exist yet; events sent while it does not are dropped, as EventBridge
// drops them.
func (e *Emulator) SetEventQueue(name string) {
	e.locked(func(s *state) { s.life().eventQueue = name })
}

// emit sends an event to the event queue, if one is set and exists (under e.mu).
func (s *state) emit(detailType, source string, resources []string, detail any, now time.Time) {
	l := s.life()
	if l.eventQueue == "" {
		return
	}
	q := s.queues[l.eventQueue]
	if q == nil {
		log.Printf("aws emulator: event queue %s does not exist; %s dropped", l.eventQueue, detailType)
		return
	}
	l.eventSeq++
	ev := bridgeEvent{
		Version: "0", ID: uuidLike("event", strconv.Itoa(l.eventSeq), detailType), DetailType: detailType, Source: source,
		Account: s.opts.AccountID, Time: now.UTC().Format(time.RFC3339), Region: s.opts.Region,
		Resources: resources, Detail: detail,
	}
	body, _ := json.Marshal(ev)
	q.send(string(body), 0, now)
}

func (s *state) stateChangeEvent(in *Instance, now time.Time) {
	arn := "arn:aws:ec2:" + s.opts.Region + ":" + s.opts.AccountID + ":instance/" + in.ID
	s.emit(DetailStateChange, "aws.ec2", []string{arn}, map[string]string{"instance-id": in.ID, "state": in.State}, now)
}

func (s *state) liveInstance(id string) (*Instance, error) {
	in := s.instances[id]
	if in == nil {
		return nil, fmt.Errorf("instance %s does not exist", id)
	}
	if in.State == "terminated" || in.State == "shutting-down" {
		return nil, fmt.Errorf("instance %s is %s", id, in.State)
	}
	return in, nil
}

// InterruptSpot reclaims a spot instance as EC2 does: the interruption warning now, and
// when notice has passed the instance is shutting down (terminated BootDelay later).
func (e *Emulator) InterruptSpot(id string, notice time.Duration) error {
	var err error
	e.locked(func(s *state) {
		var in *Instance
		if in, err = s.liveInstance(id); err != nil {
			return
		}
		if in.CapacityType != "spot" {
			err = fmt.Errorf("instance %s is %s, not spot", id, in.CapacityType)
			return
		}
		now := s.now()
		s.emit(DetailSpotInterruption, "aws.ec2", []string{"arn:aws:ec2:" + in.Zone + ":instance/" + id},
			map[string]string{"instance-id": id, "instance-action": "terminate"}, now)
		l := s.life()
		l.scheduled = append(l.scheduled, scheduledAction{at: now.Add(notice), id: id, state: "shutting-down"})
	})
	return err
}

// RecommendRebalance sends an EC2 Instance Rebalance Recommendation for the instance.
func (e *Emulator) RecommendRebalance(id string) error {
	var err error
	e.locked(func(s *state) {
		var in *Instance
		if in, err = s.liveInstance(id); err != nil {
			return
		}
		s.emit(DetailRebalance, "aws.ec2", []string{"arn:aws:ec2:" + in.Zone + ":instance/" + id},
			map[string]string{"instance-id": id}, s.now())
	})
	return err
}

// ScheduleChange sends an AWS Health scheduled-change event: the instance is to be
// stopped for maintenance at start (the emulator does not stop it; the event is what
// Karpenter acts on).
func (e *Emulator) ScheduleChange(id string, start time.Time) error {
	var err error
	e.locked(func(s *state) {
		if _, err = s.liveInstance(id); err != nil {
			return
		}
		s.life().eventSeq++
		arn := "arn:aws:health:" + s.opts.Region + "::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/AWS_EC2_INSTANCE_STOP_SCHEDULED_" + hashHex(16, "health", id, strconv.Itoa(s.life().eventSeq))
		const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"
		s.emit(DetailHealth, "aws.health", []string{id}, map[string]any{
			"eventArn": arn, "service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_STOP_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"startTime":         start.UTC().Format(httpDate),
			"endTime":           start.Add(time.Hour).UTC().Format(httpDate),
			"eventDescription":  []map[string]string{{"language": "en_US", "latestDescription": "The instance is scheduled to be stopped for maintenance."}},
			"affectedEntities":  []map[string]string{{"entityValue": id}},
		}, s.now())
	})
	return err
}

// controlEvent answers POST /_emulator/events:
// {"kind":"spot-interruption|rebalance|scheduled-change","instanceId":"i-…","noticeSeconds":120}.
// noticeSeconds is the spot notice (default 120) or the time until a scheduled change starts.
func (e *Emulator) controlEvent(r *http.Request) (int, error) {
	var in struct {
		Kind          string `json:"kind"`
		InstanceID    string `json:"instanceId"`
		NoticeSeconds *int   `json:"noticeSeconds"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return http.StatusBadRequest, err
	}
	notice := 120 * time.Second
	if in.NoticeSeconds != nil {
		if *in.NoticeSeconds < 0 {
			return http.StatusBadRequest, fmt.Errorf("noticeSeconds must be >= 0")
		}
		notice = time.Duration(*in.NoticeSeconds) * time.Second
	}
	var err error
	switch in.Kind {
	case "spot-interruption":
		err = e.InterruptSpot(in.InstanceID, notice)
	case "rebalance":
		err = e.RecommendRebalance(in.InstanceID)
	case "scheduled-change":
		err = e.ScheduleChange(in.InstanceID, e.opts.clock().Now().Add(notice))
	default:
		return http.StatusBadRequest, fmt.Errorf("kind %q is not spot-interruption, rebalance or scheduled-change", in.Kind)
	}
	if err != nil {
		return http.StatusBadRequest, err
	}
	return http.StatusOK, nil
}
