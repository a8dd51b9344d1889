package e2e_test

import (
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// TestAWSSpotInterruption: a spot instance gets EC2's two-minute warning. Karpenter
// launches the replacement, which is Ready before the instance is gone, drains the
// node without breaking the PodDisruptionBudget, and marks the offering unavailable.
func TestAWSSpotInterruption(t *testing.T) {
	e := startAWS(t, awsOptions{})
	np := awsNodePool("default", "default", 8)
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), np)
	e.waitNodeClassReady(t, "default")
	w := startInvariantWatcher(t, e.provisioningEnv, "default")
	e.apply(t, kit.Deployment("default", "app", 4, "1", "1Gi", false),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 3},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
		}})
	e.waitRunning(t, 4, 3*time.Minute)
	nodes := e.nodesOf(t, "app")
	var victim string
	for n := range nodes {
		victim = n
		break
	}
	in := e.instanceOfNode(t, victim)
	if in.CapacityType != "spot" {
		t.Fatalf("instance %s is %s, want spot", in.ID, in.CapacityType)
	}
	if err := e.emu.InterruptSpot(in.ID, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	warned := time.Now()

	// Poll until the instance is gone; remember when a replacement node became Ready.
	var replacementReady time.Time
	if err := poll(e.ctx, 4*time.Minute, func() (bool, error) {
		list := &corev1.NodeList{}
		if err := e.Client.List(e.ctx, list); err != nil {
			return false, err
		}
		for _, n := range list.Items {
			if nodes[n.Name] || !n.CreationTimestamp.After(warned.Add(-time.Second)) || !nodeReady(&n) {
				continue
			}
			if replacementReady.IsZero() {
				replacementReady = time.Now()
			}
		}
		for _, cur := range e.emu.Instances() {
			if cur.ID == in.ID {
				return cur.State == "terminated" || cur.State == "shutting-down", nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("interrupted instance %s not gone within 4m: %v", in.ID, err)
	}
	gone := time.Now()
	if replacementReady.IsZero() {
		t.Fatalf("no replacement node was Ready before instance %s went away (%s after the warning)", in.ID, gone.Sub(warned).Round(time.Second))
	}
	t.Logf("replacement Ready %s after the warning, instance gone after %s", replacementReady.Sub(warned).Round(time.Second), gone.Sub(warned).Round(time.Second))
	e.waitRunning(t, 4, 3*time.Minute)
	if e.nodesOf(t, "app")[victim] {
		t.Errorf("pods still on the interrupted node %s", victim)
	}
	w.Assert(t)
	if w.KarpenterRemovals() == 0 {
		t.Errorf("the invariant watcher saw no pod removed by Karpenter: the drain was not observed")
	}
	if err := poll(e.ctx, time.Minute, func() (bool, error) { return e.instanceMismatch() == "", nil }); err != nil {
		t.Errorf("instances vs NodeClaims: %s", e.instanceMismatch())
	}
}

// TestAWSImpairedInstanceIsReplaced: EC2's system status check of one node's
// instance has been failing for five minutes. Karpenter's status polling (no
// queue event involved) deletes its NodeClaim; the instance is terminated, its
// pods run on a replacement, and instances match NodeClaims again.
func TestAWSImpairedInstanceIsReplaced(t *testing.T) {
	e := startAWS(t, awsOptions{})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), awsNodePool("default", "default", 8))
	e.waitNodeClassReady(t, "default")
	e.apply(t, kit.Deployment("default", "app", 2, "1", "1Gi", false))
	e.waitRunning(t, 2, 3*time.Minute)
	var victim string
	for n := range e.nodesOf(t, "app") {
		victim = n
		break
	}
	in := e.instanceOfNode(t, victim)
	if err := e.emu.SetInstanceHealth(in.ID, awsemulator.InstanceHealth{
		System: awsemulator.StatusCheck{Status: awsemulator.CheckFailed, ImpairedSince: time.Now().Add(-5 * time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	impaired := time.Now()

	// The controller polls every minute.
	if err := poll(e.ctx, 4*time.Minute, func() (bool, error) {
		for _, cur := range e.emu.Instances() {
			if cur.ID == in.ID {
				return cur.State == "terminated" || cur.State == "shutting-down", nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("impaired instance %s not terminated within 4m: %v (karpenter log %s)", in.ID, err, e.karpenter.LogPath)
	}
	t.Logf("impaired instance gone %s after its check failed", time.Since(impaired).Round(time.Second))
	e.waitRunning(t, 2, 3*time.Minute)
	if e.nodesOf(t, "app")[victim] {
		t.Errorf("pods still on the impaired node %s", victim)
	}
	if err := poll(e.ctx, time.Minute, func() (bool, error) { return e.instanceMismatch() == "", nil }); err != nil {
		t.Errorf("instances vs NodeClaims: %s", e.instanceMismatch())
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestAWSDriftOnNewAMI: AWS publishes a new AL2023 AMI (the SSM parameter behind
// al2023@latest changes); every node is replaced by one on the new AMI, never more
// at once than the NodePool's budget allows.
func TestAWSDriftOnNewAMI(t *testing.T) {
	e := startAWS(t, awsOptions{})
	np := awsNodePool("default", "default", 4)
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), np)
	e.waitNodeClassReady(t, "default")
	w := startInvariantWatcher(t, e.provisioningEnv, "default")
	e.apply(t, kit.Deployment("default", "app", 3, "3", "2Gi", false))
	e.waitRunning(t, 3, 3*time.Minute)
	old := map[string]bool{}
	for _, in := range e.liveInstances() {
		old[in.ImageID] = true
	}

	param := "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"
	img := e.emu.AddImage(awsemulator.Image{
		Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20251201", OwnerAlias: "amazon", Public: true,
		Architecture: "x86_64", CreationDate: time.Now().UTC(),
	})
	e.emu.PutParameter(param, img.ID)
	if err := poll(e.ctx, 6*time.Minute, func() (bool, error) {
		live := e.liveInstances()
		if len(live) == 0 {
			return false, nil
		}
		for _, in := range live {
			if in.ImageID != img.ID {
				return false, nil
			}
		}
		c, err := kit.Count(e.ctx, e.Client, "default")
		return err == nil && c.Running == 3, err
	}); err != nil {
		var ids []string
		for _, in := range e.liveInstances() {
			ids = append(ids, in.ID+"="+in.ImageID)
		}
		t.Fatalf("nodes not rolled to %s within 6m: %v (karpenter log %s)", img.ID, ids, e.karpenter.LogPath)
	}
	w.Assert(t)
	e.expectInstancesMatchNodeClaims(t)
}

// TestAWSGarbageCollectsInstanceLaunchedBeforeACrash: Karpenter is SIGKILLed after
// EC2 launched an instance but before Karpenter learned of it (the CreateFleet answer
// never arrives, so no status is written). After a restart every instance has a
// NodeClaim: the orphan is terminated by garbage collection.
func TestAWSGarbageCollectsInstanceLaunchedBeforeACrash(t *testing.T) {
	var killed onceFlag
	e := startAWS(t, awsOptions{interceptor: func(e *awsEnv, action string, form url.Values) bool {
		if action != "CreateFleet" || form.Get("DryRun") == "true" || !killed.fire() {
			return false
		}
		e.karpenter.Kill()
		return true
	}})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), awsNodePool("default", "default", 8))
	e.waitNodeClassReady(t, "default")
	e.apply(t, kit.Deployment("default", "app", 1, "1", "1Gi", false))
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) { return len(e.emu.Instances()) > 0, nil }); err != nil {
		t.Fatal("no instance launched")
	}
	orphan := e.emu.Instances()[0].ID
	// The killed process's exit; then a new one.
	e.startKarpenterAWS(t)
	e.waitRunning(t, 1, 3*time.Minute)
	if err := poll(e.ctx, 5*time.Minute, func() (bool, error) { return e.instanceMismatch() == "", nil }); err != nil {
		t.Fatalf("after garbage collection: %s (karpenter log %s)", e.instanceMismatch(), e.karpenter.LogPath)
	}
	for _, in := range e.liveInstances() {
		if in.ID == orphan {
			t.Fatalf("orphan %s still running", orphan)
		}
	}
}

// TestAWSThrottlingRecovers: half of all EC2 requests answer RequestLimitExceeded for a
// minute while pods are pending. Afterwards every pod runs and no instance was
// launched twice (every instance has exactly one NodeClaim).
func TestAWSThrottlingRecovers(t *testing.T) {
	e := startAWS(t, awsOptions{})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), awsNodePool("default", "default", 8))
	e.waitNodeClassReady(t, "default")
	e.emu.InjectFault(awsemulator.Fault{Service: "ec2", Code: "RequestLimitExceeded", Rate: 0.5})
	throttled := time.Now()
	e.apply(t, kit.Deployment("default", "app", 10, "1", "2Gi", false))
	// The fault window: a minute of wall time, while the cluster is watched.
	window := time.NewTimer(time.Until(throttled.Add(time.Minute)))
	<-window.C
	e.emu.ClearFaults()
	e.waitRunning(t, 10, 5*time.Minute)
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) { return e.instanceMismatch() == "", nil }); err != nil {
		t.Fatalf("after throttling: %s", e.instanceMismatch())
	}
	e.expectNodesMatchNodeClaims(t)
}
