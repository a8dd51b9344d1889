package awsemulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// BenchmarkDescribeInstanceTypesAllPages: Karpenter's instance type query over all
// 1,363 types (14 pages), through the SDK.
func BenchmarkDescribeInstanceTypesAllPages(b *testing.B) {
	c := start(b)
	in := &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		filter("supported-virtualization-type", "hvm"), filter("processor-info.supported-architecture", "x86_64", "arm64"),
	}}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(allInstanceTypes(b, c, in)); n != 1363 {
			b.Fatalf("%d types", n)
		}
	}
}

// BenchmarkDescribeInstanceTypeOfferingsAllPages: every zonal offering (about 4,600).
func BenchmarkDescribeInstanceTypeOfferingsAllPages(b *testing.B) {
	c := start(b)
	b.ReportAllocs()
	for b.Loop() {
		p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
		for p.HasMorePages() {
			if _, err := p.NextPage(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
