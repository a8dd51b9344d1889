package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// A NodeClaim whose Node the API server refuses launches all the same (the
// instance runs, its kubelet cannot join), waits with Registered Unknown, is
// left alone by garbage collection, and is deleted at the registration
// timeout, counted as registration_timeout.
func TestNodeThatCannotRegisterTimesOutRegistration(t *testing.T) {
	f := setup(t)
	refuseNodesLabelled(f.ctx, t, "registration", "fail")
	nc := nodeClaim("claim-refused", "default")
	nc.Labels["registration"] = "fail"
	ExpectApplied(f.ctx, t, e.Client, nc)

	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if c := condition(nc, v1.ConditionTypeLaunched); !c.IsTrue() {
		t.Fatalf("Launched: %+v", c)
	}
	if c := condition(nc, v1.ConditionTypeRegistered); !c.IsUnknown() || c.Reason != "NodeNotFound" {
		t.Fatalf("Registered: %+v", c)
	}
	if c := condition(nc, v1.ConditionTypeInitialized); !c.IsUnknown() {
		t.Fatalf("Initialized: %+v", c)
	}
	ExpectNotFound(f.ctx, t, e.Client, nodeOf(nc))

	// The instance is still there for garbage collection, minutes later.
	f.clk.Step(14 * time.Minute)
	gc := garbagecollection.NewController(e.Client, f.cp, f.clk, nil)
	if res, err := gc.Reconcile(f.ctx); err != nil || len(res.DeletedNodeClaims) != 0 {
		t.Fatalf("garbage collection: %+v, %v", res, err)
	}
	res := ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if nc = ExpectExists(f.ctx, t, e.Client, nc); !nc.DeletionTimestamp.IsZero() {
		t.Fatal("deleted before the registration timeout")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute+time.Second {
		t.Fatalf("expected to be called back by the registration timeout, got %v", res.RequeueAfter)
	}

	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonRegistrationTimeout, "default", nc.Labels[v1.CapacityTypeLabelKey], "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	stepPast(f, nc, lifecycle.RegistrationTimeout)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if got := testutil.ToFloat64(disrupted); got != before+1 {
		t.Fatalf("disrupted_total{reason=registration_timeout}: %v -> %v", before, got)
	}
	if c := ExpectExists(f.ctx, t, e.Client, nodePool("default")).StatusConditions().Get(v1.ConditionTypeNodeRegistrationHealthy); !c.IsFalse() {
		t.Fatalf("NodePool NodeRegistrationHealthy after a registration timeout: %+v", c)
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc) // finalize: the instance is terminated
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if list, _ := f.cp.List(f.ctx); len(list) != 0 {
		t.Fatalf("instance survived its NodeClaim: %d", len(list))
	}
}

// refuseNodesLabelled makes the API server refuse every Node created with the
// label key=value (a ValidatingAdmissionPolicy), until the test ends.
func refuseNodesLabelled(ctx context.Context, t *testing.T, key, value string) {
	t.Helper()
	name := "refuse-nodes-" + key
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('" + key + "' in object.metadata.labels) || object.metadata.labels['" + key + "'] != '" + value + "'",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	ExpectApplied(ctx, t, e.Client, policy, binding)
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, policy} {
			if err := e.Client.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		}
	})
	// The API server enforces a new policy once its informers saw it.
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-probe", Labels: map[string]string{key: value}}}
	Eventually(t, 30*time.Second, func() error {
		err := e.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return nil
		}
		if err == nil {
			return errors.New("the policy does not refuse the node yet")
		}
		return err
	})
}
