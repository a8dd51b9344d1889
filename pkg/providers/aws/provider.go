package aws

import (
	"context"
	"flag"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	crcontrollers "github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/instancetype/capacity"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/zonalshift"
)

// NodeClassLabelKey is the label naming a node's EC2NodeClass
// (karpenter.k8s.aws/ec2nodeclass).
var NodeClassLabelKey = v1.NodeClassLabelKey(schema.GroupKind{Group: awsv1.Group, Kind: "EC2NodeClass"})

// Provider builds the AWS bundle: the CloudProvider over the instance type
// and price providers, the EC2NodeClass status controller, the price
// refresher, the interruption controller (INTERRUPTION_QUEUE), the
// discovered-capacity controller, the AWS
// well-known labels and the EC2NodeClass label.
type Provider struct {
	Options settings.Options
}

var (
	_ cloudprovider.Provider         = (*Provider)(nil)
	_ cloudprovider.SettingsReporter = (*Provider)(nil)
)

// NewProvider returns the AWS provider with its settings at their defaults.
func NewProvider() cloudprovider.Provider { return &Provider{} }

// Name is "aws".
func (p *Provider) Name() string { return ProviderName }

// AddFlags registers the AWS settings. cluster-name is the core's flag (one
// CLUSTER_NAME for both, as upstream), not registered twice.
func (p *Provider) AddFlags(fs *flag.FlagSet, env cloudprovider.Env) { p.Options.AddFlags(fs, env) }

// Validate requires a cluster name (the AWS provider tags, names and
// discovers by it; the message names CLUSTER_NAME) and checks the other AWS
// settings. The core's cluster-name flag is the one read.
func (p *Provider) Validate() error { return p.Options.Validate() }

// FeatureGates are the parsed AWS_FEATURE_GATES (valid once Validate ran).
func (p *Provider) FeatureGates() []cloudprovider.FeatureGate {
	var out []cloudprovider.FeatureGate
	for _, g := range p.Options.FeatureGates.States() {
		out = append(out, cloudprovider.FeatureGate{Name: g.Name, Enabled: g.Enabled, Implemented: g.Implemented})
	}
	return out
}

// SettingWarnings name the AWS settings (gates included) that are set but
// not implemented.
func (p *Provider) SettingWarnings() []string {
	return append(p.Options.FeatureGates.Warnings(), p.Options.SettingWarnings()...)
}

// ClusterRules: read EC2NodeClasses, and write them (finalizer, hash
// annotations) and their status.
func (p *Provider) ClusterRules() []cloudprovider.ClusterRule {
	return []cloudprovider.ClusterRule{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{awsv1.Group}, Resources: []string{"ec2nodeclasses"}, Verbs: []string{"get", "list", "watch"}}},
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{awsv1.Group}, Resources: []string{"ec2nodeclasses", "ec2nodeclasses/status"}, Verbs: []string{"patch", "update"}}},
	}
}

// AdminRules: admins manage EC2NodeClasses (upstream's verbs).
func (p *Provider) AdminRules() []cloudprovider.ClusterRule {
	return []cloudprovider.ClusterRule{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{awsv1.Group}, Resources: []string{"ec2nodeclasses"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}}},
	}
}

// Offline plans with the instance types EC2 describes (read calls only) and
// prices AWS nodes from the reference prices.
func (p *Provider) Offline() cloudprovider.Offline { return offline{} }

// New loads the AWS SDK configuration the standard way (AWS_REGION,
// credentials chain, AWS_ENDPOINT_URL[_<SERVICE>]) and builds the bundle.
func (p *Provider) New(ctx context.Context, deps cloudprovider.Deps) (*cloudprovider.Bundle, error) {
	// Again here: Validate is also what copies the shared cluster-name, and a
	// caller may build the bundle without the registry having validated.
	if err := p.Options.Validate(); err != nil {
		return nil, err
	}
	cfg, err := settings.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	// Without it the SDK and net/http race on request bodies and drop
	// connections under responses (see the httpclient package).
	httpclient.Configure(&cfg)

	// The Kubernetes version selects the EKS AMIs of an alias when the
	// cluster is not an EKS cluster the account can describe.
	var disc discovery.ServerVersionInterface
	if deps.Manager != nil {
		if disc, err = discovery.NewDiscoveryClientForConfig(deps.Manager.GetConfig()); err != nil {
			return nil, fmt.Errorf("building the API server discovery client: %w", err)
		}
	}
	opts := &p.Options
	providers := NewProviders(cfg, opts, disc, deps.Clock)
	ec2api := providers.EC2 // one EC2 client (and retry quota) for the whole provider
	prices := pricing.NewProvider(ec2api, pricing.NewPricingClient(cfg), cfg.Region, opts.IsolatedVPC, deps.Clock)
	unavailable := instancetype.NewUnavailableOfferings(deps.Clock)
	itOpts := instancetype.Options{
		Region:                  cfg.Region,
		VMMemoryOverheadPercent: opts.VMMemoryOverheadPercent,
		ReservedENIs:            opts.ReservedENIs,
		NodeClassCEL:            opts.FeatureGates.Values[settings.FeatureNodeClassCEL],
		DisableReservedCapacity: !options.FeatureGateValue(deps.FeatureGates, options.FeatureReservedCapacity),
		ReservationCounts:       providers.CapacityReservations.Availability(),
	}
	var controllers []cloudprovider.Controller
	var instOpts instance.Options
	if opts.EnableZonalShift {
		shifts, err := NewZonalShifts(ctx, cfg, opts.ClusterName, deps.Clock)
		if err != nil {
			return nil, err
		}
		itOpts.ZonalShifts, instOpts.ZonalShifts = shifts, shifts
		controllers = append(controllers, cloudprovider.Runnable(zonalshift.NewController(shifts, deps.KubeClient, deps.Recorder, deps.Clock)))
	}
	if options.FeatureGateValue(deps.FeatureGates, options.FeatureNodeOverlay) && deps.KubeClient != nil {
		// Types EC2 has no price for take a NodeOverlay's, as upstream's.
		itOpts.OverlayPrices = instancetype.NewOverlayPrices(deps.KubeClient, deps.Clock)
	}
	instanceTypes := instancetype.NewProvider(ec2api, prices, unavailable, deps.Clock, itOpts)
	// The nodes' cluster DNS address, read once at start-up as upstream does.
	var reader client.Reader = deps.KubeClient
	if deps.Manager != nil {
		reader = deps.Manager.GetAPIReader() // the cache is not running yet
	}
	kubeDNSIP := discoverKubeDNS(ctx, reader)
	instanceTypes.SetPlacementGroups(providers.PlacementGroups)
	launchTemplates, instances := newLaunch(cfg, deps, opts, providers, unavailable, kubeDNSIP, instOpts, instanceTypes)
	drift := NewDrift(deps.KubeClient, instances, instanceTypes)
	drift.SetPlacementGroups(providers.PlacementGroups)
	providers.LaunchTemplates = launchTemplates // deleted with their EC2NodeClass
	providers.KubeletExpressions = instanceTypes
	nodeClasses := nodeclass.NewController(deps.KubeClient, deps.Clock, deps.Recorder, opts, providers)
	nodeClasses.DisableReservedCapacity = !options.FeatureGateValue(deps.FeatureGates, options.FeatureReservedCapacity)
	priceRefresh := pricing.NewController(prices, deps.Clock)
	cp := New(deps.KubeClient, instanceTypes, WithInstances(instances, opts.ClusterName),
		WithRebootForRepair(opts.FeatureGates.Values[settings.FeatureRebootForRepair]),
		WithDrift(drift))
	return &cloudprovider.Bundle{
		CloudProvider: cp,
		Controllers: append([]cloudprovider.Controller{
			cloudprovider.Runnable(launchTemplates),
			cloudprovider.Registerer(nodeClasses.Register),
			cloudprovider.Runnable(priceRefresh),
			interruptionController(cfg, deps, opts, unavailable),
			instanceStatusController(ec2api, deps, unavailable),
			// Registered nodes' memory replaces the instance types' estimate.
			capacity.NewController(deps.KubeClient, instanceTypes),
			// Expiring Capacity Blocks are drained before EC2 reclaims them;
			// NodeClaims whose reservation ended are on-demand again.
			crcontrollers.NewExpiration(deps.KubeClient, providers.CapacityReservations, deps.Clock),
			crcontrollers.NewCapacityType(deps.KubeClient, cp, deps.Clock),
		}, append(controllers, lifecycleControllers(deps, opts.ClusterName, instances)...)...),
		WellKnownLabels:   awsv1.WellKnownLabels,
		NodeClassLabelKey: NodeClassLabelKey,
	}, nil
}
