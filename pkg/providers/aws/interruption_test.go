package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestTheBundleHandlesInterruptions: with --interruption-queue the bundle
// runs the interruption controller, and a spot interruption warning takes the
// offering out of the bundle's own instance types (one unavailable-offerings
// cache for both) and deletes the NodeClaim.
func TestTheBundleHandlesInterruptions(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	if _, err := em.CreateQueue("interruptions"); err != nil {
		t.Fatal(err)
	}
	pointSDKAt(t, em)
	_, provider := parseAWS(t, em.Options().ClusterName, "--interruption-queue=interruptions")
	mgr := env.NewManager(t, e.Config, e.Scheme)
	bundle, err := provider.New(ctx, cloudprovider.Deps{
		Manager: mgr, KubeClient: mgr.GetClient(), Clock: clock.RealClock{},
		Recorder: mgr.GetEventRecorderFor("karpenter"), //nolint:staticcheck // the controllers take a record.EventRecorder
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.RegisterEach(ctx, mgr, bundle.Controllers...); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	np := nodePool("default")
	ExpectApplied(ctx, t, e.Client, ec2NodeClass(em, true), np)
	zone := em.Options().Zones[0]
	spotAvailable := func() (bool, error) {
		its, err := bundle.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			return false, err
		}
		for _, it := range its {
			if it.Name != "m5.large" {
				continue
			}
			for _, o := range it.Offerings {
				if o.CapacityType == v1.CapacityTypeSpot && o.Zone == zone {
					return o.Available, nil
				}
			}
		}
		return false, fmt.Errorf("no m5.large spot offering in %s", zone)
	}
	if ok, err := spotAvailable(); err != nil || !ok {
		t.Fatalf("m5.large spot in %s available=%v before the interruption (%v)", zone, ok, err)
	}

	id := "i-0wired0000000001"
	labels := map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}
	nodeClaim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "spot", Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
		Status: v1.NodeClaimStatus{ProviderID: "aws:///" + zone + "/" + id},
	}
	ExpectApplied(ctx, t, e.Client, nodeClaim)
	Eventually(t, 30*time.Second, func() error {
		l := &v1.NodeClaimList{}
		if err := mgr.GetClient().List(ctx, l, client.MatchingFields{interruption.NodeClaimInstanceIDIndex: id}); err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("the controller's cache does not have the nodeclaim yet")
		}
		return nil
	})
	if _, err := em.SendQueueMessage("interruptions", `{"version":"0","id":"e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",`+
		`"time":"2026-11-24T15:00:00Z","region":"us-west-2","resources":[],"detail":{"instance-id":"`+id+`","instance-action":"terminate"}}`); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, func() error {
		if visible, inFlight := em.QueueDepth("interruptions"); visible+inFlight > 0 {
			return fmt.Errorf("message still queued")
		}
		if cur := ExpectExists(ctx, t, e.Client, nodeClaim.DeepCopy()); cur.DeletionTimestamp == nil {
			return fmt.Errorf("nodeclaim not deleted")
		}
		ok, err := spotAvailable()
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("m5.large spot in %s still available", zone)
		}
		return nil
	})
}
