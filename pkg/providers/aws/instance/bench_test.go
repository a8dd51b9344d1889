package instance_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
)

// BenchmarkCreate100 launches 100 NodeClaims at once (one NodePool, spot or
// on-demand, three instance types) and reports the EC2 calls per burst.
func BenchmarkCreate100(b *testing.B) {
	env := launchtest.New(b)
	nc := env.NodeClass(b, "default")
	ctx := context.Background()
	// Production batch windows (35 ms idle, 1 s max).
	insts := instance.NewProvider(env.EC2, env.LaunchTemplates, env.Providers.Subnets, env.Unavailable, env.Clock, instance.Options{ClusterName: env.ClusterName})
	types := env.InstanceTypesFor(b, nc, launchtest.NodeClaim("x", nc, both, "m5.large", "m5.xlarge", "c5.large"))
	const n = 100
	b.ReportAllocs()
	b.ResetTimer()
	var fleets, lts, describes int
	for iter := 0; iter < b.N; iter++ {
		env.Emulator.ResetCalls()
		claims := make([]*v1.NodeClaim, n)
		for i := range claims {
			claims[i] = launchtest.NodeClaim(fmt.Sprintf("c-%d-%d", iter, i), nc, both, "m5.large", "m5.xlarge", "c5.large")
		}
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := insts.Create(ctx, nc, claims[i], env.Tags(nc, claims[i]), types); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		fleets += env.Emulator.Calls("ec2", "CreateFleet")
		lts += env.Emulator.Calls("ec2", "CreateLaunchTemplate")
		describes += env.Emulator.Calls("ec2", "DescribeSubnets")
	}
	b.ReportMetric(float64(fleets)/float64(b.N), "CreateFleet/100")
	b.ReportMetric(float64(lts)/float64(b.N), "CreateLaunchTemplate/100")
	b.ReportMetric(float64(describes)/float64(b.N), "DescribeSubnets/100")
}
