// Package instancestatus reads EC2's status checks and scheduled events
// (DescribeInstanceStatus) and reports the instances EC2 considers unhealthy.
//
// One List is three paginated DescribeInstanceStatus calls, because EC2 ANDs
// filters of different names and an instance counts when any of these holds:
// its instance status is impaired, its system status is impaired, or it has a
// scheduled event (instance-reboot, system-reboot, system-maintenance,
// instance-retirement, instance-stop). An instance answered by several calls
// is kept once.
//
// Of each instance, a detail counts when it failed: a status check that has
// been failing for at least UnhealthyThreshold, or any scheduled event (its
// start is often days ahead, and its existence already says the host is to be
// vacated, as the interruption queue's scheduled changes do). Attached EBS
// status checks are not acted on: a failing volume may be a pod's, not the
// node's. An instance with no detail that counts is not reported.
package instancestatus

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
)

// Category is the kind of check a detail comes from; its value is the
// category label of karpenter_interruption_instance_status_unhealthy_total.
type Category string

const (
	InstanceStatus Category = "InstanceStatus"
	SystemStatus   Category = "SystemStatus"
	EventStatus    Category = "EventStatus"
	// EBSStatus details are read but never reported (see the package doc).
	EBSStatus Category = "EBSStatus"
)

// UnhealthyThreshold is how long a status check must have been failing.
const UnhealthyThreshold = 120 * time.Second

// ScheduledEventCodes are the scheduled events that make an instance unhealthy.
var ScheduledEventCodes = []string{
	string(ec2types.EventCodeInstanceReboot), string(ec2types.EventCodeSystemReboot), string(ec2types.EventCodeSystemMaintenance),
	string(ec2types.EventCodeInstanceRetirement), string(ec2types.EventCodeInstanceStop),
}

// queries are the three filter sets whose answers are ORed.
func queries() [][]ec2types.Filter {
	impaired := []string{string(ec2types.SummaryStatusImpaired)}
	return [][]ec2types.Filter{
		{{Name: aws.String("instance-status.status"), Values: impaired}},
		{{Name: aws.String("system-status.status"), Values: impaired}},
		{{Name: aws.String("event.code"), Values: ScheduledEventCodes}},
	}
}

// Detail is one failed check or scheduled event of an instance.
type Detail struct {
	Category Category
	// Name is the check's name (reachability) or the event's code.
	Name string
	// ImpairedSince is when the check started failing; for an event, when
	// it was read.
	ImpairedSince time.Time
}

// Health is an instance EC2 reports unhealthy.
type Health struct {
	InstanceID string
	// ImpairedSince is the earliest ImpairedSince of Details.
	ImpairedSince time.Time
	// Details are the failed checks and events that count (at least one).
	Details []Detail
}

// Categories are the distinct categories of h's details, in detail order.
func (h Health) Categories() []Category {
	var out []Category
	seen := map[Category]bool{}
	for _, d := range h.Details {
		if !seen[d.Category] {
			seen[d.Category] = true
			out = append(out, d.Category)
		}
	}
	return out
}

// Provider lists unhealthy instances.
type Provider struct {
	ec2   ec2.DescribeInstanceStatusAPIClient
	clock clock.Clock
	// PageSize is the MaxResults of each call; 0 leaves it to EC2.
	PageSize int32
}

// NewProvider returns a Provider calling api.
func NewProvider(api ec2.DescribeInstanceStatusAPIClient, clk clock.Clock) *Provider {
	return &Provider{ec2: api, clock: clk}
}

// List returns the instances EC2 reports unhealthy (see the package doc), in
// the order EC2 answered them. The error wraps the SDK's, so callers can tell
// an UnauthorizedOperation.
func (p *Provider) List(ctx context.Context) ([]Health, error) {
	var order []string
	answered := map[string]ec2types.InstanceStatus{}
	for _, filters := range queries() {
		in := &ec2.DescribeInstanceStatusInput{Filters: filters}
		if p.PageSize > 0 {
			in.MaxResults = aws.Int32(p.PageSize)
		}
		pager := ec2.NewDescribeInstanceStatusPaginator(p.ec2, in)
		for pager.HasMorePages() {
			out, err := pager.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing ec2 instance status checks: %w", err)
			}
			for _, st := range out.InstanceStatuses {
				id := aws.ToString(st.InstanceId)
				if _, dup := answered[id]; dup || id == "" {
					continue
				}
				answered[id] = st
				order = append(order, id)
			}
		}
	}
	now := p.clock.Now()
	var out []Health
	for _, id := range order {
		h := Health{InstanceID: id}
		for _, d := range details(answered[id], now) {
			if d.Category == EBSStatus {
				continue
			}
			if d.Category != EventStatus && now.Sub(d.ImpairedSince) < UnhealthyThreshold {
				continue
			}
			h.Details = append(h.Details, d)
			if h.ImpairedSince.IsZero() || d.ImpairedSince.Before(h.ImpairedSince) {
				h.ImpairedSince = d.ImpairedSince
			}
		}
		if len(h.Details) > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// details are the failed checks and the scheduled events of one answer.
func details(st ec2types.InstanceStatus, now time.Time) []Detail {
	var out []Detail
	checks := func(c Category, sum *ec2types.InstanceStatusSummary) {
		if sum == nil {
			return
		}
		for _, d := range sum.Details {
			if d.Status == ec2types.StatusTypeFailed {
				out = append(out, Detail{Category: c, Name: string(d.Name), ImpairedSince: aws.ToTime(d.ImpairedSince)})
			}
		}
	}
	checks(InstanceStatus, st.InstanceStatus)
	checks(SystemStatus, st.SystemStatus)
	if st.AttachedEbsStatus != nil {
		for _, d := range st.AttachedEbsStatus.Details {
			if d.Status == ec2types.StatusTypeFailed {
				out = append(out, Detail{Category: EBSStatus, Name: string(d.Name), ImpairedSince: aws.ToTime(d.ImpairedSince)})
			}
		}
	}
	for _, ev := range st.Events {
		out = append(out, Detail{Category: EventStatus, Name: string(ev.Code), ImpairedSince: now})
	}
	return out
}
