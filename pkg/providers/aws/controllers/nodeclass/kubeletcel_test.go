package nodeclass_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	awsprovider "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func withNodeClassCEL(o *settings.Options) {
	o.FeatureGates = options.GateSet{Values: map[string]bool{settings.FeatureNodeClassCEL: true}}
}

// expectBlocked: ValidationSucceeded False with reason and message, Ready
// False, nothing dry-run.
func (f *fixture) expectBlocked(t *testing.T, nc *v1.EC2NodeClass, reason string, messages ...string) {
	t.Helper()
	for _, m := range messages {
		expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reason, m)
	}
	if r := nc.StatusConditions().Get(status.ConditionReady); !r.IsFalse() {
		t.Errorf("Ready %+v, want False", r)
	}
	if n := f.aws.Calls("ec2", "CreateFleet") + f.aws.Calls("ec2", "RunInstances") + f.aws.Calls("ec2", "CreateLaunchTemplate"); n != 0 {
		t.Errorf("%d dry runs for a class that cannot launch", n)
	}
}

// With the NodeClassCEL gate off (the default), a class whose kubelet holds
// CEL expressions is not launched from: ValidationSucceeded is False,
// KubeletExpressionsDisabled, naming the fields. Replacing them by values
// makes the class Ready.
func TestKubeletExpressionsWithTheGateOff(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("cel-off")
	nc.Spec.Kubelet = kubelet(t, `{"maxPods":"min(110, vcpus * 8)","kubeReserved":{"cpu":"vcpus * 30","memory":"1Gi"},"systemReserved":{"memory":"memory_mib / 100"}}`)
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	f.expectBlocked(t, nc, nodeclass.ReasonKubeletExpressionsDisabled,
		"spec.kubelet contains a CEL expression (spec.kubelet.maxPods, spec.kubelet.kubeReserved[cpu], spec.kubelet.systemReserved[memory])",
		"the NodeClassCEL feature gate is disabled")

	nc.Spec.Kubelet = kubelet(t, `{"maxPods":58,"kubeReserved":{"cpu":"100m","memory":"1Gi"}}`)
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
}

// With the gate on, expressions that do not compile or do not return a
// number make ValidationSucceeded False, KubeletExpressionInvalid, naming
// the field; valid ones make the class Ready.
func TestKubeletExpressionsInvalid(t *testing.T) {
	for _, c := range []struct {
		name, kubelet string
		messages      []string
	}{
		{"maxPods syntax", `{"maxPods":"min(110, vcpus *"}`, []string{"spec.kubelet.maxPods: compiling"}},
		{"maxPods bool", `{"maxPods":"vcpus > 4"}`, []string{"spec.kubelet.maxPods:", "must return an int or a double"}},
		{"kubeReserved unknown variable", `{"kubeReserved":{"memory":"pods * 11","cpu":"100m"}}`, []string{"spec.kubelet.kubeReserved[memory]:", "pods"}},
		{"systemReserved string", `{"systemReserved":{"cpu":"instance_type"}}`, []string{"spec.kubelet.systemReserved[cpu]:", "must return an int or a double"}},
		{"two fields", `{"maxPods":"abc","systemReserved":{"ephemeral-storage":"1 +"}}`, []string{"spec.kubelet.maxPods:", "; spec.kubelet.systemReserved[ephemeral-storage]:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, withNodeClassCEL)
			nc := newNodeClass("cel-invalid")
			nc.Spec.Kubelet = kubelet(t, c.kubelet)
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			f.expectBlocked(t, nc, nodeclass.ReasonKubeletExpressionInvalid, c.messages...)
		})
	}
	f := setup(t, withNodeClassCEL)
	nc := newNodeClass("cel-valid")
	nc.Spec.Kubelet = kubelet(t, `{"maxPods":"min(110, default_enis * (ips_per_eni - 1))","kubeReserved":{"cpu":"max(60, vcpus * 30)","memory":"max_pods * 11 + 255"},"systemReserved":{"memory":"memory_mib / 100"}}`)
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
}

// With the gate on and the instance types known, an expression that
// compiles but has no usable result for some instance type makes
// ValidationSucceeded False, KubeletExpressionEvaluationFailed, naming the
// field and the type.
func TestKubeletExpressionsEvaluationFailed(t *testing.T) {
	for _, c := range []struct {
		name, kubelet string
		messages      []string
	}{
		{"maxPods division by zero", `{"maxPods":"100 / (vcpus - vcpus)"}`, []string{"instance type ", "spec.kubelet.maxPods:", "division by zero"}},
		{"maxPods beyond int32", `{"maxPods":"3000000000 + vcpus"}`, []string{"spec.kubelet.maxPods:", "outside [0, 2147483647]"}},
		{"kubeReserved negative", `{"kubeReserved":{"cpu":"vcpus - 8"}}`, []string{"spec.kubelet.kubeReserved[cpu]:", "negative"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, withNodeClassCEL)
			f.withInstanceTypes()
			nc := newNodeClass("cel-eval")
			nc.Spec.Kubelet = kubelet(t, c.kubelet)
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			f.expectBlocked(t, nc, nodeclass.ReasonKubeletExpressionEvalFailed, c.messages...)
		})
	}
}

// When EC2 cannot describe the instance types the expressions are not
// judged: the reconcile fails (and is retried) without a False condition.
func TestKubeletExpressionsWaitForTheInstanceTypes(t *testing.T) {
	f := setup(t, withNodeClassCEL)
	f.withInstanceTypes()
	f.aws.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstanceTypes", Code: "UnauthorizedOperation"})
	nc := newNodeClass("cel-wait")
	nc.Spec.Kubelet = kubelet(t, `{"maxPods":"100 / (vcpus - vcpus)"}`)
	ExpectApplied(f.ctx, t, e.Client, nc)
	if err := ExpectReconcileFailed(f.ctx, t, f.c, nc); !strings.Contains(err.Error(), "DescribeInstanceTypes") {
		t.Errorf("reconcile error %v, want one naming DescribeInstanceTypes", err)
	}
	nc = ExpectExists(f.ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if c := nc.StatusConditions().Get(v1.ConditionTypeValidationSucceeded); c != nil && c.Reason == nodeclass.ReasonKubeletExpressionEvalFailed {
		t.Errorf("ValidationSucceeded %+v while the instance types are unknown", c)
	}
}

// withInstanceTypes rebuilds the controller with the instance type
// provider (NodeClassCEL on) evaluating kubelet expressions, as the AWS
// provider wires it.
func (f *fixture) withInstanceTypes() {
	cfg := awstest.Config(f.aws)
	providers := awsprovider.NewProviders(cfg, f.opts, e.KubeClient.Discovery(), f.clk)
	ec2api := ec2.NewFromConfig(cfg)
	providers.KubeletExpressions = instancetype.NewProvider(ec2api,
		pricing.NewProvider(ec2api, pricing.NewPricingClient(cfg), cfg.Region, false, f.clk),
		instancetype.NewUnavailableOfferings(f.clk), f.clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075, NodeClassCEL: true})
	f.c = nodeclass.NewController(e.Client, f.clk, nil, f.opts, providers)
}
