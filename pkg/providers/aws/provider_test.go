package aws_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// pointSDKAt makes the SDK's default configuration chain (what the bundle
// loads, as in production) reach the emulator: AWS_ENDPOINT_URL, region and
// static credentials, and no shared config files of the machine.
func pointSDKAt(t *testing.T, em *awsemulator.Emulator) {
	t.Helper()
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	for _, kv := range em.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// parseAWS parses a command line the way cmd/karpenter does, with the aws
// provider chosen.
func parseAWS(t *testing.T, clusterName string, args ...string) (*options.Options, cloudprovider.Provider) {
	t.Helper()
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	getenv := func(k string) string {
		return map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": clusterName}[k]
	}
	core, finish := options.Register(fs, getenv)
	choose := providers.Register(fs, getenv, core)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	p, err := choose()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "aws" {
		t.Fatalf("chose %q, want aws", p.Name())
	}
	return core, p
}

// TestTheBundleRuns builds the operator as cmd/karpenter does with
// --cloud-provider=aws (the SDK configured through the environment to reach
// the emulator), runs every controller under a real manager, and follows an
// EC2NodeClass and its NodePool: the bundle's EC2NodeClass controller
// resolves subnets, security groups, AMIs and the instance profile into
// status and becomes Ready, the core's NodePool controller sees NodeClassReady,
// and the bundle's CloudProvider lists instance types whose offerings are in
// the subnets' zones and priced, spot below on-demand once the bundle's price
// refresher ran. Then a NodePool requiring dedicated tenancy gets dedicated
// nodes (expectDedicatedNodes).
func TestTheBundleRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{BootDelay: 200 * time.Millisecond})
	if err := em.RegisterNodesTo(e.Config); err != nil {
		t.Fatal(err)
	}
	cluster := em.Options().ClusterName
	pointSDKAt(t, em)
	opts, provider := parseAWS(t, cluster, "--batch-idle-duration=100ms", "--batch-max-duration=1s")

	mgr := env.NewManager(t, e.Config, e.Scheme)
	clk := clock.RealClock{}
	recorder := mgr.GetEventRecorderFor("karpenter") //nolint:staticcheck // the controllers take a record.EventRecorder
	clusterState := state.NewCluster(clk, mgr.GetClient())
	bundle, err := provider.New(ctx, cloudprovider.Deps{
		Manager: mgr, KubeClient: mgr.GetClient(), Clock: clk, Recorder: recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if bundle.NodeClassLabelKey != "karpenter.k8s.aws/ec2nodeclass" || !slices.Contains(bundle.WellKnownLabels, awsv1.LabelInstanceFamily) {
		t.Errorf("bundle labels: NodeClass %q, well-known %v", bundle.NodeClassLabelKey, bundle.WellKnownLabels)
	}
	if err := controllers.Register(ctx, mgr, controllers.Deps{
		KubeClient: mgr.GetClient(), Clock: clk, Recorder: recorder, Options: opts, Cluster: clusterState, Bundle: bundle,
	}); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-" + cluster,
		},
	}
	np := nodePool("default")
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	// Plain creates: the running controllers write status concurrently.
	if err := e.Client.Create(ctx, nc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, np.DeepCopy()); err != nil {
		t.Fatal(err)
	}

	zones := map[string]bool{}
	Eventually(t, 60*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, nc.DeepCopy())
		if !got.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("EC2NodeClass not Ready: %v", got.Status.Conditions)
		}
		s := got.Status
		if len(s.Subnets) == 0 || len(s.SecurityGroups) == 0 || len(s.AMIs) == 0 || s.InstanceProfile == "" {
			return fmt.Errorf("status incomplete: %d subnets, %d security groups, %d AMIs, instance profile %q",
				len(s.Subnets), len(s.SecurityGroups), len(s.AMIs), s.InstanceProfile)
		}
		clear(zones)
		for _, sn := range s.Subnets {
			zones[sn.Zone] = true
		}
		return nil
	})
	if len(zones) != len(em.Options().Zones) {
		t.Errorf("subnets in zones %v, want one discovered subnet in each of %v", zones, em.Options().Zones)
	}
	if profiles := em.InstanceProfiles(); len(profiles) != 1 {
		t.Errorf("%d instance profiles in the emulator, want the one created for the role", len(profiles))
	}

	Eventually(t, 30*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, np.DeepCopy())
		if c := got.StatusConditions().Get(v1.ConditionTypeNodeClassReady); !c.IsTrue() {
			return fmt.Errorf("NodePool NodeClassReady not True: %v", got.Status.Conditions)
		}
		return nil
	})

	// Before the refresher's first pass every spot price is the on-demand
	// one; afterwards EC2's spot prices (below on-demand in the emulator).
	Eventually(t, 60*time.Second, func() error {
		its, err := bundle.CloudProvider.GetInstanceTypes(ctx, ExpectExists(ctx, t, e.Client, np.DeepCopy()))
		if err != nil {
			return err
		}
		if len(its) < 1000 {
			return fmt.Errorf("%d instance types, want the emulator's catalog", len(its))
		}
		var m5 *scheduling.InstanceType
		available := 0
		for _, it := range its {
			for _, o := range it.Offerings {
				if !zones[o.Zone] {
					t.Fatalf("%s offering %+v outside the subnet zones %v", it.Name, o, zones)
				}
				if !o.Available {
					continue // not offered in that zone
				}
				available++
				if o.Price <= 0 {
					t.Fatalf("%s offering %+v: available without a price", it.Name, o)
				}
			}
			if it.Name == "m5.large" {
				m5 = it
			}
		}
		if available == 0 {
			return fmt.Errorf("no available offering")
		}
		if m5 == nil {
			return fmt.Errorf("m5.large not listed")
		}
		prices := map[string]float64{}
		for _, o := range m5.Offerings {
			if !o.Available {
				return fmt.Errorf("m5.large offering %+v unavailable", o)
			}
			prices[o.CapacityType+"/"+o.Zone] = o.Price
		}
		if len(prices) != 2*len(zones) {
			return fmt.Errorf("m5.large offerings %v, want spot and on-demand in each zone", prices)
		}
		for z := range zones {
			if spot, od := prices[v1.CapacityTypeSpot+"/"+z], prices[v1.CapacityTypeOnDemand+"/"+z]; spot >= od {
				return fmt.Errorf("m5.large in %s: spot %v not below on-demand %v yet", z, spot, od)
			}
		}
		return nil
	})
	if em.Calls("ec2", "DescribeSpotPriceHistory") == 0 {
		t.Error("the price refresher never asked EC2 for spot prices")
	}
	expectDedicatedNodes(ctx, t, em)
}

// TestNewChecksTheSettings: a bundle built without the registry's validation
// still refuses to run without a cluster name.
func TestNewChecksTheSettings(t *testing.T) {
	_, err := aws.NewProvider().New(context.Background(), cloudprovider.Deps{Clock: clock.RealClock{}, KubeClient: e.Client})
	if err == nil || !strings.Contains(err.Error(), "cluster-name (CLUSTER_NAME) is required for the aws cloud provider") {
		t.Fatalf("error %v, want it to name CLUSTER_NAME", err)
	}
}

// TestNewNeedsARegion: the bundle loads the SDK configuration the standard
// way, and without a region says which variable to set.
func TestNewNeedsARegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	_, p := parseAWS(t, "demo")
	_, err := p.New(context.Background(), cloudprovider.Deps{Clock: clock.RealClock{}, KubeClient: e.Client})
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("error %v, want it to name AWS_REGION", err)
	}
}

// ENABLE_ZONAL_SHIFT: the bundle reads the cluster's shifts once at start-up
// (GetManagedResource of the ARN EKS gives) and refuses to start, naming
// the setting, when the cluster is not registered for zonal shift, as
// upstream's. Off, the bundle never calls ARC.
func TestZonalShiftSettingWiresTheBundle(t *testing.T) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	pointSDKAt(t, em)
	cluster := em.Options().ClusterName
	deps := cloudprovider.Deps{Clock: clock.RealClock{}, KubeClient: e.Client}

	_, off := parseAWS(t, cluster)
	if _, err := off.New(context.Background(), deps); err != nil {
		t.Fatal(err)
	}
	if n := em.Calls("arc-zonal-shift", ""); n != 0 {
		t.Fatalf("%d ARC zonal shift calls with ENABLE_ZONAL_SHIFT off", n)
	}

	_, on := parseAWS(t, cluster, "--enable-zonal-shift")
	bundle, err := on.New(context.Background(), deps)
	if err != nil {
		t.Fatal(err)
	}
	if n := em.Calls("arc-zonal-shift", "GetManagedResource"); n != 1 {
		t.Fatalf("%d GetManagedResource calls at start-up, want 1", n)
	}
	if bundle == nil || len(bundle.Controllers) == 0 {
		t.Fatal("no bundle")
	}

	em.SetZonalShiftRegistered(false)
	_, err = on.New(context.Background(), deps)
	if err == nil || !strings.Contains(err.Error(), "ENABLE_ZONAL_SHIFT") || !strings.Contains(err.Error(), "not registered for zonal shift") {
		t.Fatalf("error %v, want a refusal naming ENABLE_ZONAL_SHIFT", err)
	}
}
