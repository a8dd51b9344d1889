package amifamily

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/internal/ttlcache"
)

// SSMCacheTTL is upstream's lifetime of a resolved SSM parameter.
const SSMCacheTTL = 24 * time.Hour

// SSMProvider reads SSM parameters (AMI ids) through a cache.
type SSMProvider struct {
	ssm   *ssm.Client
	cache *ttlcache.Cache[string]
}

// NewSSMProvider returns a provider caching values for SSMCacheTTL.
func NewSSMProvider(ssmapi *ssm.Client, clk clock.PassiveClock) *SSMProvider {
	return &SSMProvider{ssm: ssmapi, cache: ttlcache.New[string](clk, SSMCacheTTL)}
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
