package awsemulator_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/test/env"
)

// poll retries cond every 50ms until it holds or 30s have passed.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInstancesJoinTheClusterAsTheirUserDataSays(t *testing.T) {
	k8s := env.StartT(t)
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	if err := e.RegisterNodesTo(k8s.Config); err != nil {
		t.Fatal(err)
	}
	c := newClients(e)
	_, subnets := launchWorld(t, c, "x86_64")
	nodes := k8s.KubeClient.CoreV1().Nodes()
	instance := func(id string) awsemulator.Instance {
		for _, in := range e.Instances() {
			if in.ID == id {
				return in
			}
		}
		t.Fatalf("instance %s not found", id)
		return awsemulator.Instance{}
	}
	waitNode := func(name string) *corev1.Node {
		var node *corev1.Node
		poll(t, "node "+name, func() bool {
			n, err := nodes.Get(ctx, name, metav1.GetOptions{})
			node = n
			return err == nil
		})
		return node
	}

	// AL2023: the Node carries what Karpenter's NodeConfig part says.
	id := launchOne(t, c, userDataTemplate(t, c, "al2023", al2023UserData), ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", subnets)
	in := instance(id)
	node := waitNode(in.PrivateDNSName)
	if node.Spec.ProviderID != "aws:///"+in.Zone+"/"+id {
		t.Errorf("providerID %q", node.Spec.ProviderID)
	}
	for k, v := range map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand", "team": "karpenter", "owner": "me",
		corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: in.Zone, corev1.LabelTopologyRegion: "us-west-2",
		corev1.LabelHostname: in.PrivateDNSName, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		awsemulator.KWOKNodeKey: "fake", "topology.k8s.aws/zone-id": in.ZoneID,
	} {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Annotations[awsemulator.KWOKNodeKey] != "fake" {
		t.Errorf("annotations %v: KWOK would not run this node", node.Annotations)
	}
	wantTaints := []corev1.Taint{taint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute), taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)}
	if !reflect.DeepEqual(withoutNotReady(node.Spec.Taints), wantTaints) {
		t.Errorf("taints %v, want %v", node.Spec.Taints, wantTaints)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "50Gi"} {
		if q := node.Status.Capacity[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("capacity %s = %s, want %s", name, q.String(), want)
		}
	}
	// m5.large: 8 GiB less the 7.5% VM overhead.
	if q := node.Status.Capacity[corev1.ResourceMemory]; q.Value() != (8192-615)<<20 {
		t.Errorf("memory capacity %s", q.String())
	}
	if a, c := node.Status.Allocatable[corev1.ResourceCPU], node.Status.Capacity[corev1.ResourceCPU]; a.Cmp(c) >= 0 || a.MilliValue() != 1930 {
		t.Errorf("allocatable cpu %s of %s, want 1930m (EKS kube-reserved 70m)", a.String(), c.String())
	}

	// Bottlerocket without max-pods: the ENI formula (m5.large: 3 ENIs × (10-1) + 2).
	brID := launchOne(t, c, userDataTemplate(t, c, "bottlerocket", strings.Replace(bottlerocketUserData, "max-pods = 58\n", "", 1)), ec2types.DefaultTargetCapacityTypeSpot, "m5.large", subnets)
	br := waitNode(instance(brID).PrivateDNSName)
	if q := br.Status.Capacity[corev1.ResourcePods]; q.Value() != 29 || br.Labels["karpenter.sh/nodepool"] != "default" || len(withoutNotReady(br.Spec.Taints)) != 3 {
		t.Errorf("bottlerocket node: pods %s labels %v taints %v", q.String(), br.Labels, br.Spec.Taints)
	}

	// User data for another cluster: the instance runs, no Node joins, the reason is kept.
	wrongID := launchOne(t, c, userDataTemplate(t, c, "wrong", strings.Replace(al2UserData, "'karpenter-demo'", "'other-cluster'", 1)), ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", subnets)
	poll(t, "a registration error for "+wrongID, func() bool { return len(e.RegistrationErrors()) > 0 })
	regErr := e.RegistrationErrors()[0]
	if regErr.InstanceID != wrongID || !strings.Contains(regErr.Reason, `"other-cluster"`) || !strings.Contains(regErr.Reason, "al2") {
		t.Fatalf("registration error %+v", regErr)
	}
	if _, err := nodes.Get(ctx, instance(wrongID).PrivateDNSName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a node joined from user data naming another cluster: %v", err)
	}

	// Terminated instances lose their Nodes.
	_, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id, brID}})
	ok(t, err)
	for _, name := range []string{in.PrivateDNSName, br.Name} {
		poll(t, "node "+name+" deleted", func() bool {
			_, err := nodes.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
}

// withoutNotReady drops the taint the API server's TaintNodesByCondition admission adds
// to every new Node (the node lifecycle controller lifts it once the Node is Ready).
func withoutNotReady(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key != corev1.TaintNodeNotReady {
			out = append(out, t)
		}
	}
	return out
}

// RebootInstances boots a running instance again: its Node reports a new boot
// ID, the instance stays the same. A reboot set to hang is accepted and never
// comes back; an instance that is not running cannot be rebooted.
func TestRebootInstancesGivesTheNodeANewBootID(t *testing.T) {
	k8s := env.StartT(t)
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	if err := e.RegisterNodesTo(k8s.Config); err != nil {
		t.Fatal(err)
	}
	c := newClients(e)
	_, subnets := launchWorld(t, c, "x86_64")
	nodes := k8s.KubeClient.CoreV1().Nodes()
	id := launchOne(t, c, userDataTemplate(t, c, "al2023", al2023UserData), ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", subnets)
	var in awsemulator.Instance
	for _, i := range e.Instances() {
		if i.ID == id {
			in = i
		}
	}
	bootID := func() string {
		n, err := nodes.Get(ctx, in.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return n.Status.NodeInfo.BootID
	}
	poll(t, "node "+in.PrivateDNSName, func() bool { return bootID() != "" })
	first := bootID()

	_, err := c.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	poll(t, "a new boot ID", func() bool { return bootID() != first && bootID() != "" })
	second := bootID()

	ok(t, e.SetRebootHangs(id, true))
	_, err = c.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	for _, i := range e.Instances() {
		if i.ID == id && (i.State != "running" || i.Boots != 2) {
			t.Fatalf("after a hung reboot: %s with %d boots, want running with 2", i.State, i.Boots)
		}
	}
	if got := bootID(); got != second {
		t.Fatalf("a hung reboot changed the boot ID %s -> %s", second, got)
	}

	_, err = c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	_, err = c.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
	expectError(t, err, "IncorrectState", 400)
	_, err = c.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	expectError(t, err, "InvalidInstanceID.NotFound", 400)
}
