package nodeclass_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	awsprovider "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

const (
	cluster = "karpenter-demo"
	role    = "KarpenterNodeRole-karpenter-demo"
)

type fixture struct {
	ctx  context.Context
	aws  *awsemulator.Emulator
	clk  *clocktesting.FakeClock
	opts *settings.Options
	c    *nodeclass.Controller
}

func defaultOptions() *settings.Options {
	return &settings.Options{
		ClusterName: cluster, VMMemoryOverheadPercent: settings.DefaultVMMemoryOverheadPercent,
		AMIRefreshInterval: settings.DefaultAMIRefreshInterval, SubnetRefreshInterval: settings.DefaultSubnetRefreshInterval,
	}
}

// setup cleans the API server, starts an emulator and builds the controller
// on them. mutate adjusts the options first.
func setup(t testing.TB, mutate ...func(*settings.Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &karpv1.NodeClaimList{}, &v1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	opts := defaultOptions()
	for _, m := range mutate {
		m(opts)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	c := newController(e.Client, clk, nil, opts, awstest.Config(em), e.KubeClient.Discovery())
	return &fixture{ctx: ctx, aws: em, clk: clk, opts: opts, c: c}
}

func discovery() map[string]string { return map[string]string{"karpenter.sh/discovery": cluster} }

func newNodeClass(name string) *v1.EC2NodeClass {
	return &v1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []v1.SubnetSelectorTerm{{Tags: discovery()}},
			SecurityGroupSelectorTerms: []v1.SecurityGroupSelectorTerm{{Tags: discovery()}},
			AMISelectorTerms:           []v1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       role,
		},
	}
}

// reconcile applies nothing, runs one reconcile and returns the stored class.
func (f *fixture) reconcile(t testing.TB, nc *v1.EC2NodeClass) *v1.EC2NodeClass {
	t.Helper()
	ExpectReconciled(f.ctx, t, f.c, nc)
	return ExpectExists(f.ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
}

// expectCondition checks status, reason and (a substring of) the message.
func expectCondition(t testing.TB, nc *v1.EC2NodeClass, typ string, want metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := nc.StatusConditions().Get(typ)
	if c == nil {
		t.Fatalf("%s: no condition %s in %+v", nc.Name, typ, nc.Status.Conditions)
	}
	if c.Status != want || c.Reason != reason || !strings.Contains(c.Message, message) {
		t.Errorf("%s %s = %s/%s %q, want %s/%s containing %q", nc.Name, typ, c.Status, c.Reason, c.Message, want, reason, message)
	}
	if c.ObservedGeneration != nc.Generation {
		t.Errorf("%s %s observedGeneration %d, generation %d", nc.Name, typ, c.ObservedGeneration, nc.Generation)
	}
}

func conditionSummary(nc *v1.EC2NodeClass) string {
	var parts []string
	for _, c := range nc.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "\n")
}

// newController is the controller over the provider's own resolvers, as
// the AWS provider wires it.
func newController(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder, opts *settings.Options, cfg aws.Config, disc k8sdiscovery.ServerVersionInterface) *nodeclass.Controller {
	return nodeclass.NewController(kubeClient, clk, recorder, opts, awsprovider.NewProviders(cfg, opts, disc, clk))
}
