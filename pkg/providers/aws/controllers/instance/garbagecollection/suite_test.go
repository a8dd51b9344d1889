package garbagecollection_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/instance/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

const cluster = "karpenter-demo"

type fixture struct {
	ctx       context.Context
	aws       *awsemulator.Emulator
	cfg       aws.Config
	clk       *clocktesting.FakeClock
	instances *instance.Provider
	gc        *garbagecollection.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	clk := clocktesting.NewFakeClock(time.Now())
	instances := instance.NewProvider(ec2.NewFromConfig(cfg), nil, nil, nil, clk, instance.Options{ClusterName: cluster})
	return &fixture{ctx: ctx, aws: em, cfg: cfg, clk: clk, instances: instances,
		gc: garbagecollection.NewController(e.Client, instances, clk)}
}

// launch starts a Karpenter instance of this cluster and returns its id and
// provider ID.
func (f *fixture) launch(t *testing.T, l awstest.Launch) (string, string) {
	t.Helper()
	if l.ClusterName == "" {
		l.ClusterName = cluster
	}
	if l.NodePool == "" {
		l.NodePool = "default"
	}
	if l.NodeClass == "" {
		l.NodeClass = "default"
	}
	id := awstest.LaunchInstance(f.ctx, t, f.cfg, l)
	return id, "aws:///" + f.instance(t, id).Zone + "/" + id
}

func (f *fixture) instance(t *testing.T, id string) awsemulator.Instance {
	t.Helper()
	for _, in := range f.aws.Instances() {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("no instance %s in the emulator", id)
	return awsemulator.Instance{}
}

// alive: the instance was not asked to terminate.
func (f *fixture) alive(t *testing.T, id string) bool {
	t.Helper()
	st := f.instance(t, id).State
	return st != "shutting-down" && st != "terminated"
}

func nodeClaim(name, providerID string) *v1.NodeClaim {
	return fixtures.NodeClaim(name, fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef("default")), fixtures.WithProviderID(providerID))
}

func node(name, providerID string) *corev1.Node {
	return fixtures.Node(name, fixtures.WithProviderID(providerID))
}
