package awsemulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// DescribeInstanceStatus: the status checks and scheduled events of instances.
//
// A running instance's checks pass until a test sets them (SetInstanceHealth or
// POST /_emulator/instance-status). As EC2 reports them:
//
//   - without IncludeAllInstances only running instances are answered; with it
//     every instance that is not terminated, those not running with the summary
//     status "not-applicable" (pending: "initializing") and no details;
//   - each of instanceStatus, systemStatus and attachedEbsStatus is a summary
//     (ok | impaired | insufficient-data | initializing | not-applicable) with one
//     "reachability" detail (passed | failed | insufficient-data | initializing)
//     whose impairedSince is set while it fails;
//   - eventsSet lists the scheduled events (instance-reboot, system-reboot,
//     system-maintenance, instance-retirement, instance-stop);
//   - InstanceId.N names instances (an unknown one is InvalidInstanceID.NotFound,
//     and MaxResults cannot go with it); Filter.N narrows; MaxResults (5..1000,
//     default 1000) and NextToken page.

// Status check detail values.
const (
	CheckPassed           = "passed"
	CheckFailed           = "failed"
	CheckInsufficientData = "insufficient-data"
	CheckInitializing     = "initializing"
)

// StatusCheck is one of an instance's status checks.
type StatusCheck struct {
	// Status is the reachability detail: CheckPassed ("" means passed),
	// CheckFailed, CheckInsufficientData or CheckInitializing.
	Status string
	// ImpairedSince is when a failed check started failing; zero: when it was set.
	ImpairedSince time.Time
}

// InstanceEvent is a scheduled event on an instance.
type InstanceEvent struct {
	// Code: instance-reboot, system-reboot, system-maintenance,
	// instance-retirement or instance-stop.
	Code        string
	Description string // default: one naming the code
	// NotBefore is when the event may start (zero: when it was set); NotAfter
	// when it ends (zero: a week after NotBefore).
	NotBefore, NotAfter time.Time
}

// InstanceHealth is what DescribeInstanceStatus reports about a running
// instance beyond its state.
type InstanceHealth struct {
	Instance, System, AttachedEBS StatusCheck
	Events                        []InstanceEvent
}

var (
	checkStatuses      = nameSet(CheckPassed, CheckFailed, CheckInsufficientData, CheckInitializing)
	instanceEventCodes = nameSet("instance-reboot", "system-reboot", "system-maintenance", "instance-retirement", "instance-stop")
)

// SetInstanceHealth replaces the status checks and scheduled events of a live
// instance (the zero InstanceHealth: every check passes, no events).
func (e *Emulator) SetInstanceHealth(id string, h InstanceHealth) error {
	for _, c := range []*StatusCheck{&h.Instance, &h.System, &h.AttachedEBS} {
		if c.Status == "" {
			c.Status = CheckPassed
		}
		if !checkStatuses[c.Status] {
			return fmt.Errorf("status check %q is not passed, failed, insufficient-data or initializing", c.Status)
		}
	}
	h.Events = append([]InstanceEvent(nil), h.Events...)
	for _, ev := range h.Events {
		if !instanceEventCodes[ev.Code] {
			return fmt.Errorf("event code %q is not instance-reboot, system-reboot, system-maintenance, instance-retirement or instance-stop", ev.Code)
		}
	}
	var err error
	e.locked(func(s *state) {
		if _, err = s.liveInstance(id); err != nil {
			return
		}
		now := s.now()
		for _, c := range []*StatusCheck{&h.Instance, &h.System, &h.AttachedEBS} {
			if c.Status != CheckFailed {
				c.ImpairedSince = time.Time{}
			} else if c.ImpairedSince.IsZero() {
				c.ImpairedSince = now
			}
		}
		for i := range h.Events {
			ev := &h.Events[i]
			if ev.NotBefore.IsZero() {
				ev.NotBefore = now
			}
			if ev.NotAfter.IsZero() {
				ev.NotAfter = ev.NotBefore.Add(7 * 24 * time.Hour)
			}
			if ev.Description == "" {
				ev.Description = "The instance is scheduled for " + ev.Code
			}
		}
		if s.health == nil {
			s.health = map[string]*InstanceHealth{}
		}
		s.health[id] = &h
	})
	return err
}

// instanceStatusFilters are the filter names DescribeInstanceStatus accepts.
var instanceStatusFilters = nameSet("availability-zone", "availability-zone-id", "instance-id", "instance-state-name", "instance-state-code",
	"instance-status.status", "instance-status.reachability", "system-status.status", "system-status.reachability",
	"attached-ebs-status.status", "attached-ebs-status.reachability",
	"event.code", "event.description", "event.instance-event-id", "event.not-after", "event.not-before")

// statusEntry is one instanceStatusSet item.
type statusEntry struct {
	id, zone, zoneID, state string
	// summaries of instance, system and EBS checks; details nil when not applicable.
	instance, system, ebs summary
	events                []statusEvent
}

type summary struct {
	status string
	detail *StatusCheck
}

type statusEvent struct {
	InstanceEvent
	id string
}

func summaryOf(c StatusCheck) summary {
	st := "ok"
	switch c.Status {
	case CheckFailed:
		st = "impaired"
	case CheckInsufficientData, CheckInitializing:
		st = c.Status
	}
	return summary{status: st, detail: &c}
}

// statusEntryOf is what EC2 reports for in (under e.mu).
func (s *state) statusEntryOf(in *Instance) statusEntry {
	en := statusEntry{id: in.ID, zone: in.Zone, zoneID: in.ZoneID, state: in.State}
	switch in.State {
	case "running":
		h := s.health[in.ID]
		if h == nil {
			h = &InstanceHealth{Instance: StatusCheck{Status: CheckPassed}, System: StatusCheck{Status: CheckPassed}, AttachedEBS: StatusCheck{Status: CheckPassed}}
		}
		en.instance, en.system, en.ebs = summaryOf(h.Instance), summaryOf(h.System), summaryOf(h.AttachedEBS)
		for i, ev := range h.Events {
			en.events = append(en.events, statusEvent{InstanceEvent: ev, id: "instance-event-" + hashHex(17, in.ID, ev.Code, strconv.Itoa(i))})
		}
	case "pending":
		ini := summary{status: "initializing", detail: &StatusCheck{Status: CheckInitializing}}
		en.instance, en.system, en.ebs = ini, ini, ini
	default:
		na := summary{status: "not-applicable"}
		en.instance, en.system, en.ebs = na, na, na
	}
	return en
}

func (en *statusEntry) fields() filterFields {
	reach := func(sm summary) []string {
		if sm.detail == nil {
			return nil
		}
		return []string{sm.detail.Status}
	}
	m := map[string][]string{
		"availability-zone": {en.zone}, "availability-zone-id": {en.zoneID}, "instance-id": {en.id},
		"instance-state-name": {en.state}, "instance-state-code": {strconv.Itoa(stateCodes[en.state])},
		"instance-status.status": {en.instance.status}, "instance-status.reachability": reach(en.instance),
		"system-status.status": {en.system.status}, "system-status.reachability": reach(en.system),
		"attached-ebs-status.status": {en.ebs.status}, "attached-ebs-status.reachability": reach(en.ebs),
	}
	for _, ev := range en.events {
		m["event.code"] = append(m["event.code"], ev.Code)
		m["event.description"] = append(m["event.description"], ev.Description)
		m["event.instance-event-id"] = append(m["event.instance-event-id"], ev.id)
		m["event.not-before"] = append(m["event.not-before"], ev.NotBefore.UTC().Format(time.RFC3339))
		m["event.not-after"] = append(m["event.not-after"], ev.NotAfter.UTC().Format(time.RFC3339))
	}
	return fieldMap(m)
}

func ec2DescribeInstanceStatus(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, instanceStatusFilters); err != nil {
		return nil, err
	}
	ids := c.list("InstanceId")
	if err := idsWithMaxResults(c, ids, "instanceIds"); err != nil {
		return nil, err
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	all := c.boolean("IncludeAllInstances")
	var matched []statusEntry
	var apiErr *apiError
	c.e.locked(func(s *state) {
		apiErr = s.eachRequestedInstance(ids, func(in *Instance) {
			if in.State == "terminated" || (!all && in.State != "running") {
				return
			}
			if en := s.statusEntryOf(in); matchFilters(filters, en.fields(), nil) {
				matched = append(matched, en)
			}
		})
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 1000, min: 5, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("instanceStatusSet")
	for i := range items {
		writeStatusEntry(&b, &items[i])
	}
	b.close("instanceStatusSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

func writeStatusEntry(b *xb, en *statusEntry) {
	b.open("item")
	b.leafAlways("instanceId", en.id)
	b.leafAlways("availabilityZone", en.zone)
	b.leaf("availabilityZoneId", en.zoneID)
	writeState(b, "instanceState", en.state)
	writeSummary(b, "systemStatus", en.system)
	writeSummary(b, "instanceStatus", en.instance)
	writeSummary(b, "attachedEbsStatus", en.ebs)
	b.open("eventsSet")
	for _, ev := range en.events {
		b.open("item")
		b.leafAlways("instanceEventId", ev.id)
		b.leafAlways("code", ev.Code)
		b.leafAlways("description", ev.Description)
		b.timestamp("notBefore", ev.NotBefore)
		b.timestamp("notAfter", ev.NotAfter)
		b.close("item")
	}
	b.close("eventsSet")
	b.close("item")
}

func writeSummary(b *xb, name string, sm summary) {
	b.open(name)
	b.leafAlways("status", sm.status)
	b.open("details")
	if sm.detail != nil {
		b.open("item")
		b.leafAlways("name", "reachability")
		b.leafAlways("status", sm.detail.Status)
		b.timestamp("impairedSince", sm.detail.ImpairedSince)
		b.close("item")
	}
	b.close("details")
	b.close(name)
}

// controlInstanceStatus answers POST /_emulator/instance-status:
//
//	{"instanceId":"i-…","instanceStatus":"failed","systemStatus":"passed","ebsStatus":"passed",
//	 "impairedSeconds":300,"events":[{"code":"instance-retirement","description":"…","notBeforeSeconds":3600}]}
//
// Omitted checks pass; impairedSeconds is how long ago the failed checks
// started failing (default 0: now); notBeforeSeconds is when, from now, an
// event may start.
func (e *Emulator) controlInstanceStatus(r *http.Request) (int, error) {
	var in struct {
		InstanceID      string `json:"instanceId"`
		InstanceStatus  string `json:"instanceStatus"`
		SystemStatus    string `json:"systemStatus"`
		EBSStatus       string `json:"ebsStatus"`
		ImpairedSeconds int    `json:"impairedSeconds"`
		Events          []struct {
			Code             string `json:"code"`
			Description      string `json:"description"`
			NotBeforeSeconds int    `json:"notBeforeSeconds"`
		} `json:"events"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return http.StatusBadRequest, err
	}
	if in.ImpairedSeconds < 0 {
		return http.StatusBadRequest, fmt.Errorf("impairedSeconds must be >= 0")
	}
	now := e.opts.clock().Now()
	since := now.Add(-time.Duration(in.ImpairedSeconds) * time.Second)
	h := InstanceHealth{
		Instance:    StatusCheck{Status: in.InstanceStatus, ImpairedSince: since},
		System:      StatusCheck{Status: in.SystemStatus, ImpairedSince: since},
		AttachedEBS: StatusCheck{Status: in.EBSStatus, ImpairedSince: since},
	}
	for _, ev := range in.Events {
		h.Events = append(h.Events, InstanceEvent{Code: ev.Code, Description: ev.Description, NotBefore: now.Add(time.Duration(ev.NotBeforeSeconds) * time.Second)})
	}
	if err := e.SetInstanceHealth(in.InstanceID, h); err != nil {
		return http.StatusBadRequest, err
	}
	return http.StatusOK, nil
}
