package amifamily

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
)

// SSMCacheTTL is upstream's lifetime of a resolved SSM parameter. We cache
// for the AMI refresh interval instead (NewSSMProvider's ttl): upstream only
// drops an entry early when its AMI is deprecated, so an AMI published under
// an alias reaches nodes up to a day late; SSM's read quota (40 TPS) is far
// above the few parameters per EC2NodeClass per minute this costs.
const SSMCacheTTL = 24 * time.Hour

// SSMProvider reads SSM parameters (AMI ids) through a cache.
type SSMProvider struct {
	ssm   *ssm.Client
	cache *ttlcache.Cache[string]
}

// NewSSMProvider returns a provider caching values for ttl (0: SSMCacheTTL).
func NewSSMProvider(ssmapi *ssm.Client, clk clock.PassiveClock, ttl time.Duration) *SSMProvider {
	if ttl <= 0 {
		ttl = SSMCacheTTL
	}
	return &SSMProvider{ssm: ssmapi, cache: ttlcache.New[string](clk, ttl)}
}

// Get returns the value of parameter name (a name or an ARN).
func (p *SSMProvider) Get(ctx context.Context, name string) (string, error) {
	if v, ok := p.cache.Get(name); ok {
		return v, nil
	}
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", err
	}
	v := aws.ToString(out.Parameter.Value)
	p.cache.Set(name, v)
	return v, nil
}

// Invalidate forgets every cached parameter, e.g. when a "latest" alias must
// pick up a release published within the day.
func (p *SSMProvider) Invalidate() { p.cache.Flush() }
