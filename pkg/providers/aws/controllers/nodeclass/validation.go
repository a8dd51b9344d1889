package nodeclass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// ValidationSucceeded reasons and messages, as upstream's.
const (
	ReasonCreateFleetAuthFailed          = "CreateFleetAuthCheckFailed"
	ReasonCreateLaunchTemplateAuthFailed = "CreateLaunchTemplateAuthCheckFailed"
	ReasonRunInstancesAuthFailed         = "RunInstancesAuthCheckFailed"
	ReasonDependenciesNotReady           = "DependenciesNotReady"
	ReasonTagValidationFailed            = "TagValidationFailed"
	ReasonDryRunDisabled                 = "DryRunDisabled"
	// ReasonValidationFailed: a dry run answered neither "authorized" nor
	// "unauthorized"; the message carries EC2's answer.
	ReasonValidationFailed = "ValidationFailed"
)

var validationMessages = map[string]string{
	ReasonCreateFleetAuthFailed:          "Controller isn't authorized to call ec2:CreateFleet",
	ReasonCreateLaunchTemplateAuthFailed: "Controller isn't authorized to call ec2:CreateLaunchTemplate",
	ReasonRunInstancesAuthFailed:         "Controller isn't authorized to call ec2:RunInstances",
}

// ValidationTTL is how long a validation answer is reused while nothing it
// depends on changed (resolved status, metadata options, block devices, tags).
const ValidationTTL = 30 * time.Minute

// dependencies are the conditions validation needs True first.
var dependencies = []string{
	v1.ConditionTypeAMIsReady,
	v1.ConditionTypeInstanceProfileReady,
	v1.ConditionTypeSecurityGroupsReady,
	v1.ConditionTypeSubnetsReady,
}

// validation checks, with EC2 dry runs, that the controller may launch what
// the class describes. It launches nothing.
type validation struct {
	kube  client.Reader
	ec2   *ec2.Client
	clock clock.Clock
	opts  *settings.Options
	// cache maps <class name>:<input hash> to "" (authorized) or a reason.
	cache *ttlcache.Cache[string]
	// expressions evaluates kubelet expressions per instance type (nil:
	// they are only compiled).
	expressions KubeletExpressionValidator
}

func newValidation(kube client.Reader, ec2api *ec2.Client, clk clock.Clock, opts *settings.Options, expressions KubeletExpressionValidator) *validation {
	return &validation{kube: kube, ec2: ec2api, clock: clk, opts: opts, cache: ttlcache.New[string](clk, ValidationTTL), expressions: expressions}
}

// ReasonKubeletExpressionEvalFailed: a CEL expression of spec.kubelet
// compiles but has no usable result for an instance type (an evaluation
// error, a negative result, a maxPods beyond int32).
const ReasonKubeletExpressionEvalFailed = "KubeletExpressionEvaluationFailed"

func (v *validation) reconcile(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = v.clock.Now
	// The spec's own checks come first: they hold whatever AWS says.
	if p := checkSpec(nc, v.opts.FeatureGates.Values[settings.FeatureNodeClassCEL]); p != nil {
		conds.SetFalse(v1.ConditionTypeValidationSucceeded, p.reason, p.message)
		return 0, nil
	}
	for _, d := range dependencies {
		if conds.Get(d).IsFalse() {
			conds.SetFalse(v1.ConditionTypeValidationSucceeded, ReasonDependenciesNotReady, "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
			return 0, nil
		}
	}
	for _, d := range dependencies {
		if conds.Get(d).IsUnknown() {
			conds.SetUnknown(v1.ConditionTypeValidationSucceeded, ReasonDependenciesNotReady, "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
			return 0, nil
		}
	}
	if v.expressions != nil && v.opts.FeatureGates.Values[settings.FeatureNodeClassCEL] {
		if err := v.expressions.ValidateKubeletExpressions(ctx, nc); err != nil {
			if errors.Is(err, instancetype.ErrInstanceTypesUnavailable) {
				// Not a verdict on the expressions: try again.
				return 0, fmt.Errorf("validating the kubelet expressions of EC2NodeClass %s: %w", nc.Name, err)
			}
			conds.SetFalse(v1.ConditionTypeValidationSucceeded, ReasonKubeletExpressionEvalFailed, err.Error())
			return 0, nil
		}
	}
	tags, err := v.tags(nc)
	if err != nil {
		conds.SetFalse(v1.ConditionTypeValidationSucceeded, ReasonTagValidationFailed, err.Error())
		return 0, nil
	}
	if v.opts.DisableDryRun {
		conds.SetTrueWithReason(v1.ConditionTypeValidationSucceeded, ReasonDryRunDisabled, "Dry run is disabled")
		return 0, nil
	}
	in := v.inputs(nc, tags)
	if in.Tenancy, err = v.tenancy(ctx, nc); err != nil {
		conds.SetUnknown(v1.ConditionTypeValidationSucceeded, ReasonValidationFailed, err.Error())
		return 0, err
	}
	key := nc.Name + ":" + in.hash()
	if reason, ok := v.cache.Get(key); ok {
		v.set(nc, reason)
		return 0, nil
	}
	for _, check := range []struct {
		action, reason string
		call           func(context.Context, dryRunInputs) error
	}{
		{"ec2:CreateLaunchTemplate", ReasonCreateLaunchTemplateAuthFailed, v.createLaunchTemplate},
		{"ec2:CreateFleet", ReasonCreateFleetAuthFailed, v.createFleet},
		{"ec2:RunInstances", ReasonRunInstancesAuthFailed, v.runInstances},
	} {
		err := check.call(ctx, in)
		switch {
		case err == nil || awserr.IsDryRunSuccess(err):
			continue
		case awserr.IsUnauthorized(err):
			v.cache.Set(key, check.reason)
			v.set(nc, check.reason)
			return 0, nil
		case awserr.IsThrottled(err) || awserr.IsServerError(err) || isInstanceProfilePropagating(err):
			// Dry runs are not retried by the SDK (a denied or throttled
			// dry run must not eat the retry budget of real calls); try
			// again shortly. A new instance profile takes seconds to be
			// visible to EC2.
			setUnknownUnlessTrue(nc, conds, v1.ConditionTypeValidationSucceeded, ReasonValidationFailed, err)
			return 10 * time.Second, nil
		default:
			conds.SetUnknown(v1.ConditionTypeValidationSucceeded, ReasonValidationFailed, fmt.Sprintf("%s dry run: %s", check.action, awserr.Message(err)))
			return 0, fmt.Errorf("validating EC2NodeClass %s: %w", nc.Name, err)
		}
	}
	v.cache.Set(key, "")
	v.set(nc, "")
	return 0, nil
}

func (v *validation) set(nc *v1.EC2NodeClass, reason string) {
	conds := nc.StatusConditions()
	conds.Now = v.clock.Now
	if reason == "" {
		conds.SetTrue(v1.ConditionTypeValidationSucceeded)
		return
	}
	conds.SetFalse(v1.ConditionTypeValidationSucceeded, reason, validationMessages[reason])
}

// forget drops the cached answers of a deleted class.
func (v *validation) forget(name string) {
	v.cache.DeleteFunc(func(k, _ string) bool { return strings.HasPrefix(k, name+":") })
}

// tags are the tags Karpenter puts on what it launches for the class; spec
// tags may not take over the keys Karpenter tracks ownership with.
func (v *validation) tags(nc *v1.EC2NodeClass) (map[string]string, error) {
	out := map[string]string{}
	var bad []string
	for k, val := range nc.Spec.Tags {
		if strings.HasPrefix(k, v1.TagClusterPrefix) {
			bad = append(bad, k)
			continue
		}
		for _, r := range v1.RestrictedTagKeys {
			if k == r {
				bad = append(bad, k)
			}
		}
		out[k] = val
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("spec.tags: %s set by Karpenter and cannot be used", strings.Join(bad, ", "))
	}
	out[v1.TagClusterPrefix+v.opts.ClusterName] = "owned"
	out[v1.TagEKSClusterName] = v.opts.ClusterName
	out[v1.TagEC2NodeClass] = nc.Name
	// A launch always carries its NodePool's tag, and the controller policy
	// (docs/aws/controller-policy.json) requires it on every create: a dry
	// run without it would be refused although real launches are allowed.
	// No NodePool is involved in validation, hence the empty value.
	out[karpv1.NodePoolLabelKey] = ""
	return out, nil
}

// dryRunInputs is what the three dry runs launch.
type dryRunInputs struct {
	Name              string
	ImageID           string
	InstanceType      string
	Subnets           []string
	SecurityGroups    []string
	InstanceProfile   string
	MetadataOptions   *v1.MetadataOptions
	BlockDevices      []v1.BlockDeviceMapping
	Tags              map[string]string
	AssociatePublicIP *bool
	// Tenancy is the Placement.Tenancy launched with: dedicated when a
	// NodePool of the class allows dedicated tenancy, as upstream.
	Tenancy string
	// NetworkInterfaces are the class's spec.networkInterfaces: the dry
	// runs ask for them (with the security groups on them, as a launch
	// does) in place of the default interface.
	NetworkInterfaces []v1.NetworkInterface `json:",omitempty"`
}

func (in dryRunInputs) tenancy() string {
	if in.Tenancy == "" {
		return v1.InstanceTenancyDefault
	}
	return in.Tenancy
}

func (in dryRunInputs) hash() string {
	b, _ := json.Marshal(in)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

func (v *validation) inputs(nc *v1.EC2NodeClass, tags map[string]string) dryRunInputs {
	in := dryRunInputs{
		Name:              v1.TagManagedLaunchTemplatePrefix + nc.Name + "-validation",
		InstanceProfile:   nc.Status.InstanceProfile,
		MetadataOptions:   nc.Spec.MetadataOptions,
		Tags:              tags,
		AssociatePublicIP: nc.Spec.AssociatePublicIPAddress,
	}
	in.ImageID, in.InstanceType = validationTarget(nc.Status.AMIs)
	var interfaces []v1.NetworkInterface
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni != nil {
			interfaces = append(interfaces, *ni)
		}
	}
	// The dry runs carry the class's interfaces on a type that can hold
	// them (as upstream's run on a type compatible with the class), so that
	// EC2 answers for the permissions, not for the type; interfaces no
	// listed type holds are left to the launch, whose refusal names
	// spec.networkInterfaces.
	if len(interfaces) > 0 {
		arm := in.InstanceType == validationTypes["arm64"] || in.InstanceType == validationTypes["arm64/nvidia"]
		for _, t := range interfaceValidationTypes {
			if t.arm64 == arm && t.holds(interfaces) {
				in.InstanceType, in.NetworkInterfaces = t.name, interfaces
				break
			}
		}
	}
	for _, s := range nc.Status.Subnets {
		in.Subnets = append(in.Subnets, s.ID)
	}
	for _, g := range nc.Status.SecurityGroups {
		in.SecurityGroups = append(in.SecurityGroups, g.ID)
	}
	if len(nc.Spec.BlockDeviceMappings) > 0 {
		for _, b := range nc.Spec.BlockDeviceMappings {
			if b != nil {
				in.BlockDevices = append(in.BlockDevices, *b)
			}
		}
	} else {
		in.BlockDevices = amifamily.ForNodeClass(nc).DefaultBlockDeviceMappings
	}
	return in
}

// tenancy is the tenancy the dry runs ask for, as upstream chooses it:
// dedicated when the requirements of a NodePool referencing the class allow
// karpenter.k8s.aws/instance-tenancy dedicated (so that a policy refusing
// dedicated tenancy shows here, not at the first launch), else default.
func (v *validation) tenancy(ctx context.Context, nc *v1.EC2NodeClass) (string, error) {
	if v.kube == nil {
		return v1.InstanceTenancyDefault, nil
	}
	pools := &karpv1.NodePoolList{}
	if err := v.kube.List(ctx, pools); err != nil {
		return "", fmt.Errorf("listing the NodePools of EC2NodeClass %s: %w", nc.Name, err)
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		ref := np.Spec.Template.Spec.NodeClassRef
		if !refersTo(ref, nc.Name) {
			continue
		}
		if poolAllowsDedicated(np) {
			return v1.InstanceTenancyDedicated, nil
		}
	}
	return v1.InstanceTenancyDefault, nil
}

// poolAllowsDedicated reports whether the NodePool's requirements name
// karpenter.k8s.aws/instance-tenancy and allow dedicated.
func poolAllowsDedicated(np *karpv1.NodePool) bool {
	var reqs []scheduling.Requirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	r, ok := scheduling.NewRequirements(reqs...).Get(v1.LabelInstanceTenancy)
	return ok && r.Has(v1.InstanceTenancyDedicated)
}

// Instance types the dry runs name. Any type the AMI boots does: EC2 checks
// authorization, not capacity. A standard AMI is preferred, as upstream does,
// because accelerated AMIs may need larger root volumes than the class gives.
var validationTypes = map[string]string{
	"amd64":        "m5.large",
	"arm64":        "m6g.large",
	"amd64/nvidia": "g4dn.xlarge",
	"arm64/nvidia": "g5g.xlarge",
	"amd64/neuron": "inf2.xlarge",
	"arm64/neuron": "inf2.xlarge",
}

// interfaceValidationTypes are the dry runs' types for classes that list
// network interfaces: types with many network cards and EFA interfaces (as
// DescribeInstanceTypes reports them), smallest first.
var interfaceValidationTypes = []interfaceValidationType{
	{"c8gn.48xlarge", true, 2, 12, 2},
	{"trn1n.32xlarge", false, 16, 5, 16},
	{"p5.48xlarge", false, 32, 2, 32},
}

// interfaceValidationType is a type's network cards, interfaces per card
// and EFA interfaces.
type interfaceValidationType struct {
	name                   string
	arm64                  bool
	cards, perCard, efaMax int32
}

// holds: the type has the cards, device indexes and EFA interfaces the
// interfaces need.
func (t interfaceValidationType) holds(interfaces []v1.NetworkInterface) bool {
	efa := int32(0)
	for _, ni := range interfaces {
		if ni.NetworkCardIndex >= t.cards || ni.DeviceIndex >= t.perCard {
			return false
		}
		if ni.InterfaceType == v1.InterfaceTypeEFAOnly {
			efa++
		}
	}
	return efa <= t.efaMax
}

// validationTarget picks the image and instance type of the dry runs.
func validationTarget(amis []v1.AMI) (string, string) {
	best, bestRank := -1, 99
	for i, a := range amis {
		rank := 0
		for _, r := range a.Requirements {
			if r.Operator == corev1.NodeSelectorOpExists {
				rank = 1
			}
		}
		if a.Deprecated {
			rank += 2
		}
		if rank < bestRank {
			best, bestRank = i, rank
		}
	}
	if best < 0 {
		return "", ""
	}
	a := amis[best]
	arch, accel := "amd64", ""
	for _, r := range a.Requirements {
		switch {
		case r.Key == corev1.LabelArchStable && len(r.Values) > 0:
			arch = r.Values[0]
		case r.Key == v1.LabelInstanceGPUCount && r.Operator == corev1.NodeSelectorOpExists:
			accel = "/nvidia"
		case r.Key == v1.LabelInstanceAcceleratorCount && r.Operator == corev1.NodeSelectorOpExists:
			accel = "/neuron"
		}
	}
	if t, ok := validationTypes[arch+accel]; ok {
		return a.ID, t
	}
	return a.ID, validationTypes["amd64"]
}

// noRetry keeps the SDK from retrying a dry run.
func noRetry(o *ec2.Options) { o.Retryer = aws.NopRetryer{} }

func (v *validation) createLaunchTemplate(ctx context.Context, in dryRunInputs) error {
	input := &ec2.CreateLaunchTemplateInput{
		DryRun:             aws.Bool(true),
		LaunchTemplateName: aws.String(in.Name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:             aws.String(in.ImageID),
			InstanceType:        ec2types.InstanceType(in.InstanceType),
			SecurityGroupIds:    in.SecurityGroups,
			IamInstanceProfile:  &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(in.InstanceProfile)},
			MetadataOptions:     launchtemplate.MetadataOptions(in.MetadataOptions),
			BlockDeviceMappings: ltBlockDevices(in.BlockDevices),
			Placement:           &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.Tenancy(in.tenancy())},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: launchtemplate.EC2Tags(in.Tags)}},
	}
	if len(in.NetworkInterfaces) > 0 {
		input.LaunchTemplateData.SecurityGroupIds = nil
		for _, ni := range in.NetworkInterfaces {
			input.LaunchTemplateData.NetworkInterfaces = append(input.LaunchTemplateData.NetworkInterfaces, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
				InterfaceType: aws.String(string(ni.InterfaceType)), Groups: in.SecurityGroups,
			})
		}
	}
	_, err := v.ec2.CreateLaunchTemplate(ctx, input, noRetry)
	return err
}

func (v *validation) createFleet(ctx context.Context, in dryRunInputs) error {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, s := range in.Subnets {
		overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(in.InstanceType), SubnetId: aws.String(s), ImageId: aws.String(in.ImageID),
			// The template named does not exist (a dry run creates none): the
			// tenancy a launch template would carry goes with each pool.
			Placement: &ec2types.Placement{Tenancy: ec2types.Tenancy(in.tenancy())},
		})
	}
	tags := launchtemplate.EC2Tags(in.Tags)
	_, err := v.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
		DryRun: aws.Bool(true),
		Type:   ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(in.Name), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		},
	}, noRetry)
	return err
}

func (v *validation) runInstances(ctx context.Context, in dryRunInputs) error {
	tags := launchtemplate.EC2Tags(in.Tags)
	input := &ec2.RunInstancesInput{
		DryRun:              aws.Bool(true),
		MinCount:            aws.Int32(1),
		MaxCount:            aws.Int32(1),
		ImageId:             aws.String(in.ImageID),
		InstanceType:        ec2types.InstanceType(in.InstanceType),
		SecurityGroupIds:    in.SecurityGroups,
		IamInstanceProfile:  &ec2types.IamInstanceProfileSpecification{Name: aws.String(in.InstanceProfile)},
		MetadataOptions:     runMetadata(in.MetadataOptions),
		BlockDeviceMappings: runBlockDevices(in.BlockDevices),
		Placement:           &ec2types.Placement{Tenancy: ec2types.Tenancy(in.tenancy())},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		},
	}
	if len(in.Subnets) > 0 {
		input.SubnetId = aws.String(in.Subnets[0])
	}
	if len(in.NetworkInterfaces) > 0 {
		// The subnet and security groups then belong to the interfaces.
		input.SecurityGroupIds = nil
		for _, ni := range in.NetworkInterfaces {
			input.NetworkInterfaces = append(input.NetworkInterfaces, ec2types.InstanceNetworkInterfaceSpecification{
				NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
				InterfaceType: aws.String(string(ni.InterfaceType)), SubnetId: input.SubnetId, Groups: in.SecurityGroups,
			})
		}
		input.SubnetId = nil
	}
	_, err := v.ec2.RunInstances(ctx, input, noRetry)
	return err
}

// isInstanceProfilePropagating: EC2 does not see an instance profile IAM
// created seconds ago yet.
func isInstanceProfilePropagating(err error) bool {
	return awserr.Code(err) == "InvalidParameterValue" && strings.Contains(strings.ToLower(awserr.Message(err)), "iaminstanceprofile")
}

func runMetadata(m *v1.MetadataOptions) *ec2types.InstanceMetadataOptionsRequest {
	if m == nil {
		return nil
	}
	out := &ec2types.InstanceMetadataOptionsRequest{HttpPutResponseHopLimit: int32Ptr(m.HTTPPutResponseHopLimit)}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.InstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.InstanceMetadataProtocolState(*m.HTTPProtocolIPv6)
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.HttpTokensState(*m.HTTPTokens)
	}
	return out
}

func int32Ptr(p *int64) *int32 {
	if p == nil {
		return nil
	}
	return aws.Int32(int32(*p))
}

func ebsSizeGiB(b *v1.BlockDevice) *int32 {
	if b == nil || b.VolumeSize == nil {
		return nil
	}
	// EBS sizes are whole GiB; round up.
	gib := (b.VolumeSize.Value() + (1<<30 - 1)) >> 30
	return aws.Int32(int32(gib))
}

func ltBlockDevices(bdms []v1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, b := range bdms {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
				VolumeSize: ebsSizeGiB(e), VolumeType: ec2types.VolumeType(aws.ToString(e.VolumeType)),
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
		}
		out = append(out, m)
	}
	return out
}

func runBlockDevices(bdms []v1.BlockDeviceMapping) []ec2types.BlockDeviceMapping {
	var out []ec2types.BlockDeviceMapping
	for _, b := range bdms {
		m := ec2types.BlockDeviceMapping{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.EbsBlockDevice{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
				VolumeSize: ebsSizeGiB(e), VolumeType: ec2types.VolumeType(aws.ToString(e.VolumeType)),
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
		}
		out = append(out, m)
	}
	return out
}
