package awsemulator_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func reservationIDs(out []ec2types.CapacityReservation) []string {
	var ids []string
	for _, r := range out {
		ids = append(ids, aws.ToString(r.CapacityReservationId))
	}
	return ids
}

// TestDescribeCapacityReservations adds reservations through the library and
// reads them back through the SDK: every field the provider needs survives the
// wire, filters AND, ids stand alone, and pagination walks all of them.
func TestDescribeCapacityReservations(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := c.e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a",
		TotalInstanceCount: 4, AvailableInstanceCount: 3, Tags: map[string]string{"team": "ml"}})
	b := c.e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0b", InstanceType: "p5.48xlarge", Zone: "us-west-2b",
		InstanceMatchCriteria: "targeted", ReservationType: "capacity-block", EndDate: end, Interruptible: true,
		OwnerID: "210987654321", Tags: map[string]string{"team": "ml", "kind": "block"}})
	c.e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0c", InstanceType: "c5.large", Zone: "us-west-2a", State: "cancelled"})
	if a.OwnerID != "123456789012" || a.InstanceMatchCriteria != "open" || a.ReservationType != "default" || a.State != "active" {
		t.Fatalf("defaults not filled in: %+v", a)
	}

	all, err := c.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := reservationIDs(all.CapacityReservations); len(got) != 3 {
		t.Fatalf("all: %v", got)
	}
	r := all.CapacityReservations[1]
	if aws.ToString(r.OwnerId) != b.OwnerID || aws.ToString(r.InstanceType) != "p5.48xlarge" || aws.ToString(r.AvailabilityZone) != "us-west-2b" ||
		r.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted || r.ReservationType != ec2types.CapacityReservationTypeCapacityBlock ||
		r.State != ec2types.CapacityReservationStateActive || !aws.ToBool(r.Interruptible) || !aws.ToTime(r.EndDate).Equal(end) ||
		r.EndDateType != ec2types.EndDateTypeLimited || len(r.Tags) != 2 {
		t.Errorf("cr-0b read back wrong: %+v", r)
	}
	if r0 := all.CapacityReservations[0]; aws.ToInt32(r0.TotalInstanceCount) != 4 || aws.ToInt32(r0.AvailableInstanceCount) != 3 || r0.EndDate != nil {
		t.Errorf("cr-0a counts/end: %+v", r0)
	}

	cases := []struct {
		name    string
		filters []ec2types.Filter
		ids     []string
		want    []string
	}{
		{"tag", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"ml"}}}, nil, []string{"cr-0a", "cr-0b"}},
		{"tags ANDed", []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"ml"}}, {Name: aws.String("tag:kind"), Values: []string{"block"}}}, nil, []string{"cr-0b"}},
		{"tag-key", []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"kind"}}}, nil, []string{"cr-0b"}},
		{"owner-id", []ec2types.Filter{{Name: aws.String("owner-id"), Values: []string{"123456789012"}}}, nil, []string{"cr-0a", "cr-0c"}},
		{"instance-match-criteria", []ec2types.Filter{{Name: aws.String("instance-match-criteria"), Values: []string{"targeted"}}}, nil, []string{"cr-0b"}},
		{"state", []ec2types.Filter{{Name: aws.String("state"), Values: []string{"active"}}}, nil, []string{"cr-0a", "cr-0b"}},
		{"ids", nil, []string{"cr-0c", "cr-0a"}, []string{"cr-0a", "cr-0c"}},
		{"ids and state", []ec2types.Filter{{Name: aws.String("state"), Values: []string{"active"}}}, []string{"cr-0c", "cr-0a"}, []string{"cr-0a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: tc.filters, CapacityReservationIds: tc.ids})
			if err != nil {
				t.Fatal(err)
			}
			if got := reservationIDs(out.CapacityReservations); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	var paged []string
	p := ec2.NewDescribeCapacityReservationsPaginator(c.ec2, &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(1)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		paged = append(paged, reservationIDs(out.CapacityReservations)...)
	}
	if pages != 3 || !slices.Equal(paged, []string{"cr-0a", "cr-0b", "cr-0c"}) {
		t.Errorf("pagination: %d pages %v", pages, paged)
	}

	_, err = c.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-missing"}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("unknown id: %v", err)
	}
	_, err = c.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{{Name: aws.String("color"), Values: []string{"x"}}}})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("unknown filter: %v", err)
	}
	if !c.e.RemoveCapacityReservation("cr-0c") || c.e.RemoveCapacityReservation("cr-0c") {
		t.Error("RemoveCapacityReservation")
	}
}
