package batcher

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
)

// EC2 batches CreateFleet, DescribeInstances and TerminateInstances of one client.
type EC2 struct {
	createFleet *Batcher[*ec2.CreateFleetInput, *ec2.CreateFleetOutput]
	describe    *Batcher[*ec2.DescribeInstancesInput, *ec2.DescribeInstancesOutput]
	terminate   *Batcher[*ec2.TerminateInstancesInput, *ec2.TerminateInstancesOutput]
}

// NewEC2 returns the batchers of api with opts' windows (zero = defaults).
func NewEC2(api *ec2.Client, opts Options) *EC2 {
	fleetOpts, describeOpts, terminateOpts := opts, opts, opts
	// EC2 accepts up to 1,000 instance ids per call.
	describeOpts.MaxItems, terminateOpts.MaxItems = 500, 500
	fleetOpts.Name, describeOpts.Name, terminateOpts.Name = "create_fleet", "describe_instances", "terminate_instances"
	return &EC2{
		createFleet: New(fleetOpts, fleetKey, createFleetExec(api)),
		describe:    New(describeOpts, describeKey, describeExec(api)),
		terminate:   New(terminateOpts, func(*ec2.TerminateInstancesInput) string { return "" }, terminateExec(api)),
	}
}

// CreateFleet launches TotalTargetCapacity 1 for the caller; identical
// requests share one call for the sum of their capacity. The output holds the
// caller's instance (at most one) and every error EC2 reported for the batch.
func (b *EC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
	return b.createFleet.Add(ctx, in)
}

// DescribeInstances of the input's InstanceIds (merged with others' ids when
// the filters are equal); the output holds the caller's instances only.
func (b *EC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) (*ec2.DescribeInstancesOutput, error) {
	return b.describe.Add(ctx, in)
}

// TerminateInstances of the input's InstanceIds, merged with others'.
func (b *EC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput) (*ec2.TerminateInstancesOutput, error) {
	return b.terminate.Add(ctx, in)
}

func hashJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Unhashable input: a batch of its own.
		return fmt.Sprintf("%p", v)
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// fleetKey hashes everything but the capacity.
func fleetKey(in *ec2.CreateFleetInput) string {
	cp := *in
	cp.TargetCapacitySpecification = nil
	cp.ClientToken = nil
	spec := in.TargetCapacitySpecification
	var ct ec2types.DefaultTargetCapacityType
	if spec != nil {
		ct = spec.DefaultTargetCapacityType
	}
	return string(ct) + "/" + hashJSON(cp)
}

func createFleetExec(api *ec2.Client) Executor[*ec2.CreateFleetInput, *ec2.CreateFleetOutput] {
	return func(ctx context.Context, inputs []*ec2.CreateFleetInput) []Result[*ec2.CreateFleetOutput] {
		results := make([]Result[*ec2.CreateFleetOutput], len(inputs))
		in := *inputs[0]
		spec := ec2types.TargetCapacitySpecificationRequest{}
		if in.TargetCapacitySpecification != nil {
			spec = *in.TargetCapacitySpecification
		}
		spec.TotalTargetCapacity = aws.Int32(int32(len(inputs)))
		in.TargetCapacitySpecification = &spec
		out, err := api.CreateFleet(ctx, &in)
		if err != nil {
			for i := range results {
				results[i].Err = err
			}
			return results
		}
		// Hand out the launched instances one per caller, in request order.
		type launched struct {
			inst ec2types.CreateFleetInstance
			id   string
		}
		var all []launched
		for _, fi := range out.Instances {
			for _, id := range fi.InstanceIds {
				all = append(all, launched{fi, id})
			}
		}
		for i := range results {
			o := &ec2.CreateFleetOutput{FleetId: out.FleetId, Errors: out.Errors, ResultMetadata: out.ResultMetadata}
			if i < len(all) {
				fi := all[i].inst
				fi.InstanceIds = []string{all[i].id}
				o.Instances = []ec2types.CreateFleetInstance{fi}
			}
			results[i].Output = o
		}
		return results
	}
}

func describeKey(in *ec2.DescribeInstancesInput) string {
	cp := *in
	cp.InstanceIds = nil
	return hashJSON(cp)
}

func describeExec(api *ec2.Client) Executor[*ec2.DescribeInstancesInput, *ec2.DescribeInstancesOutput] {
	return func(ctx context.Context, inputs []*ec2.DescribeInstancesInput) []Result[*ec2.DescribeInstancesOutput] {
		results := make([]Result[*ec2.DescribeInstancesOutput], len(inputs))
		if len(inputs) == 1 {
			results[0].Output, results[0].Err = describeAll(ctx, api, inputs[0])
			return results
		}
		seen := map[string]bool{}
		var ids []string
		for _, in := range inputs {
			for _, id := range in.InstanceIds {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		sort.Strings(ids)
		merged := *inputs[0]
		merged.InstanceIds = ids
		out, err := describeAll(ctx, api, &merged)
		if err != nil {
			// One missing id fails the whole call: ask for each caller's alone.
			if awserr.Code(err) == "InvalidInstanceID.NotFound" || awserr.Code(err) == "InvalidInstanceID.Malformed" {
				for i, in := range inputs {
					results[i].Output, results[i].Err = describeAll(ctx, api, in)
				}
				return results
			}
			for i := range results {
				results[i].Err = err
			}
			return results
		}
		for i, in := range inputs {
			want := map[string]bool{}
			for _, id := range in.InstanceIds {
				want[id] = true
			}
			o := &ec2.DescribeInstancesOutput{}
			for _, r := range out.Reservations {
				rr := r
				rr.Instances = nil
				for _, inst := range r.Instances {
					if want[aws.ToString(inst.InstanceId)] {
						rr.Instances = append(rr.Instances, inst)
					}
				}
				if len(rr.Instances) > 0 {
					o.Reservations = append(o.Reservations, rr)
				}
			}
			results[i].Output = o
		}
		return results
	}
}

// describeAll reads every page.
func describeAll(ctx context.Context, api *ec2.Client, in *ec2.DescribeInstancesInput) (*ec2.DescribeInstancesOutput, error) {
	rs, err := pages.Collect(ctx, ec2.NewDescribeInstancesPaginator(api, in),
		func(acc []ec2types.Reservation, page *ec2.DescribeInstancesOutput) []ec2types.Reservation {
			return append(acc, page.Reservations...)
		})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstancesOutput{Reservations: rs}, nil
}

func terminateExec(api *ec2.Client) Executor[*ec2.TerminateInstancesInput, *ec2.TerminateInstancesOutput] {
	return func(ctx context.Context, inputs []*ec2.TerminateInstancesInput) []Result[*ec2.TerminateInstancesOutput] {
		results := make([]Result[*ec2.TerminateInstancesOutput], len(inputs))
		if len(inputs) == 1 {
			results[0].Output, results[0].Err = api.TerminateInstances(ctx, inputs[0])
			return results
		}
		seen := map[string]bool{}
		var ids []string
		for _, in := range inputs {
			for _, id := range in.InstanceIds {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		out, err := api.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
		if err != nil {
			if awserr.Code(err) == "InvalidInstanceID.NotFound" || awserr.Code(err) == "InvalidInstanceID.Malformed" {
				for i, in := range inputs {
					results[i].Output, results[i].Err = api.TerminateInstances(ctx, in)
				}
				return results
			}
			for i := range results {
				results[i].Err = err
			}
			return results
		}
		byID := map[string]ec2types.InstanceStateChange{}
		for _, c := range out.TerminatingInstances {
			byID[aws.ToString(c.InstanceId)] = c
		}
		for i, in := range inputs {
			o := &ec2.TerminateInstancesOutput{}
			for _, id := range in.InstanceIds {
				if c, ok := byID[id]; ok {
					o.TerminatingInstances = append(o.TerminatingInstances, c)
				}
			}
			results[i].Output = o
		}
		return results
	}
}
