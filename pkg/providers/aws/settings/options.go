// Package settings holds the AWS provider's settings. Like the core settings in
// pkg/operator/options, every setting is a flag whose default comes from the
// environment variable upstream Karpenter reads (CLUSTER_ENDPOINT,
// VM_MEMORY_OVERHEAD_PERCENT, ...), so a Helm chart written for upstream
// configures this provider unchanged. Precedence: flag, then environment, then
// the upstream default.
//
// The AWS region is not a flag: as upstream, it comes from the SDK's own
// configuration chain (AWS_REGION, the shared config file), see LoadAWSConfig.
package settings

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/sdkmetrics"
)

// Upstream defaults.
const (
	DefaultVMMemoryOverheadPercent      = 0.075
	DefaultAMIRefreshInterval           = time.Minute
	DefaultSubnetRefreshInterval        = time.Minute
	DefaultSecurityGroupRefreshInterval = time.Minute
)

// AWS feature gate names (upstream's AWS_FEATURE_GATES).
const (
	FeatureNodeClassCEL    = "NodeClassCEL"
	FeatureDRANVIDIAGPU    = "DRANVIDIAGPU"
	FeatureDRAEFA          = "DRAEFA"
	FeatureRebootForRepair = "RebootForRepair"
)

// Gates are upstream v1.15's AWS feature gates (--aws-feature-gates,
// AWS_FEATURE_GATES), in the order upstream's chart renders them, with
// upstream's defaults. NodeClassCEL and RebootForRepair are implemented;
// enabling any other logs a warning at start-up.
var Gates = []options.Gate{
	{Name: FeatureNodeClassCEL, Implemented: true},
	{Name: FeatureDRANVIDIAGPU, Missing: "no Dynamic Resource Allocation: the devices of the NVIDIA GPU driver are not simulated"},
	{Name: FeatureDRAEFA, Missing: "no Dynamic Resource Allocation: the EFA devices of the dranet driver are not simulated"},
	{Name: FeatureRebootForRepair, Implemented: true},
}

// Options are the AWS provider's settings.
type Options struct {
	// ClusterName names the cluster: instances, instance profiles and launch
	// templates are tagged with it and discovery selects by it. Required.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; discovered through
	// EKS DescribeCluster when empty.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA nodes trust for the API server;
	// taken from the controller's own kubeconfig when empty.
	ClusterCABundle string
	// IsolatedVPC: AWS services without a VPC endpoint (the Pricing API) are
	// unreachable, so static prices are used.
	IsolatedVPC bool
	// EKSControlPlane: the cluster is an EKS cluster (its version and
	// endpoint can be read through EKS DescribeCluster).
	EKSControlPlane bool
	// VMMemoryOverheadPercent of an instance type's memory is assumed lost to
	// the hypervisor before the kubelet sees it, until a registered node of
	// the type reports its real memory (the capacity controller).
	VMMemoryOverheadPercent float64
	// InterruptionQueue is the SQS queue name of EC2 interruption events;
	// interruption handling is off when empty.
	InterruptionQueue string
	// ReservedENIs are network interfaces left out of the max-pods math
	// (VPC CNI custom networking).
	ReservedENIs int
	// DisableDryRun skips the dry-run authorization checks of EC2NodeClass
	// validation (for accounts whose SCPs deny dry runs).
	DisableDryRun bool
	// AMIRefreshInterval is how often an EC2NodeClass's AMIs are resolved again.
	AMIRefreshInterval time.Duration
	// SubnetRefreshInterval is how often an EC2NodeClass's subnets are resolved again.
	SubnetRefreshInterval time.Duration
	// SecurityGroupRefreshInterval is how long an answer of
	// DescribeSecurityGroups is reused for an EC2NodeClass's terms.
	SecurityGroupRefreshInterval time.Duration
	// EnableZonalShift: the cluster's ARC zonal shifts (and autoshifts) are
	// read every 30 seconds and no offering in a zone traffic is shifted
	// away from is launched into while the shift lasts (package zonalshift).
	EnableZonalShift bool
	// FeatureGates is the parsed AWS_FEATURE_GATES.
	FeatureGates options.GateSet

	// featureGates is the raw --aws-feature-gates value, parsed by Validate.
	featureGates string

	// env is the environment reader of Register, whose malformed values
	// Validate reports; nil when the owner of the Env passed to AddFlags
	// reports them.
	env *options.Env
	// sharedClusterName is the core options' cluster-name flag when it was
	// registered on the same FlagSet first (both upstream binaries read one
	// CLUSTER_NAME); Validate copies its value.
	sharedClusterName *flag.Flag
}

// Register adds the AWS flags to fs with defaults from the environment
// (getenv, usually os.Getenv; nil means os.Getenv) and returns the options
// they fill once fs is parsed. Call Validate after fs.Parse. A malformed
// environment value is reported by Validate, naming the variable. (The
// operator registers through AddFlags instead, with the Env the provider
// registry hands every provider.)
func Register(fs *flag.FlagSet, getenv func(string) string) *Options {
	o := &Options{}
	o.env = options.NewEnv(getenv)
	o.AddFlags(fs, o.env)
	return o
}

// AddFlags adds the AWS flags to fs, their defaults read through env, which
// keeps the malformed values for its owner to report.
//
// cluster-name is shared with the core options: when fs already has it, that
// flag is used instead of defining a second one, and Validate copies its value.
func (o *Options) AddFlags(fs *flag.FlagSet, env cloudprovider.Env) {
	if f := fs.Lookup("cluster-name"); f != nil {
		o.sharedClusterName = f
	} else {
		fs.StringVar(&o.ClusterName, "cluster-name", env.String("CLUSTER_NAME", ""), "[REQUIRED] Name of the cluster; resources Karpenter creates are tagged with it.")
	}
	fs.StringVar(&o.ClusterEndpoint, "cluster-endpoint", env.String("CLUSTER_ENDPOINT", ""), "API server URL new nodes join. Discovered through EKS DescribeCluster when unset.")
	fs.StringVar(&o.ClusterCABundle, "cluster-ca-bundle", env.String("CLUSTER_CA_BUNDLE", ""), "Base64 PEM CA bundle nodes use to verify the API server. Taken from the controller's own configuration when unset.")
	fs.BoolVar(&o.IsolatedVPC, "isolated-vpc", env.Bool("ISOLATED_VPC", false), "Assume AWS services without a VPC endpoint (the Pricing API) are unreachable and use static prices.")
	fs.BoolVar(&o.EKSControlPlane, "eks-control-plane", env.Bool("EKS_CONTROL_PLANE", false), "The cluster runs on an EKS control plane. The Kubernetes version is read from EKS DescribeCluster of cluster-name and, when that fails, from the API server, whatever this says.")
	fs.Float64Var(&o.VMMemoryOverheadPercent, "vm-memory-overhead-percent", env.Float64("VM_MEMORY_OVERHEAD_PERCENT", DefaultVMMemoryOverheadPercent), "Fraction of an instance type's memory subtracted for the hypervisor (0.075 = 7.5%), until a registered node of the type has reported its memory.")
	fs.StringVar(&o.InterruptionQueue, "interruption-queue", env.String("INTERRUPTION_QUEUE", ""), "SQS queue name for EC2 interruption events. Interruption handling is off when unset.")
	fs.IntVar(&o.ReservedENIs, "reserved-enis", env.Int("RESERVED_ENIS", 0), "Network interfaces left out of the max-pods calculation (VPC CNI custom networking).")
	fs.BoolVar(&o.DisableDryRun, "disable-dry-run", env.Bool("DISABLE_DRY_RUN", false), "Skip the dry-run authorization checks (CreateFleet, CreateLaunchTemplate, RunInstances) of EC2NodeClass validation.")
	fs.DurationVar(&o.AMIRefreshInterval, "ami-refresh-interval", env.Duration("AMI_REFRESH_INTERVAL", DefaultAMIRefreshInterval), "How often EC2NodeClass AMIs are resolved again.")
	fs.DurationVar(&o.SubnetRefreshInterval, "subnet-refresh-interval", env.Duration("SUBNET_REFRESH_INTERVAL", DefaultSubnetRefreshInterval), "How often EC2NodeClass subnets are resolved again.")
	fs.DurationVar(&o.SecurityGroupRefreshInterval, "security-group-refresh-interval", env.Duration("SECURITY_GROUP_REFRESH_INTERVAL", DefaultSecurityGroupRefreshInterval), "How long DescribeSecurityGroups answers are reused: a security group change shows in EC2NodeClass status after at most this long.")
	fs.BoolVar(&o.EnableZonalShift, "enable-zonal-shift", env.Bool("ENABLE_ZONAL_SHIFT", false), "Read the cluster's ARC zonal shifts and launch nothing into a zone traffic is shifted away from. Needs arc-zonal-shift:GetManagedResource on the cluster's ARN, and the cluster registered for zonal shift.")
	fs.StringVar(&o.featureGates, "aws-feature-gates", env.String("AWS_FEATURE_GATES", options.DefaultString(Gates)), "Comma-separated AWS Gate=bool pairs: "+strings.Join(options.GateSet{Gates: Gates}.Names(), ", ")+". NodeClassCEL and RebootForRepair are implemented; enabling another, or an unknown name, logs a warning at start-up.")
}

// SettingWarnings name the AWS settings that are set but not implemented.
func (o *Options) SettingWarnings() []string {
	var out []string
	if o.VMMemoryOverheadPercent >= 1 {
		out = append(out, fmt.Sprintf("vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) is %v, a fraction of 1 or more: every instance type's estimated memory is zero or less until its nodes register and report theirs, so no pod requesting memory fits a type never launched (0.075 is the default)", o.VMMemoryOverheadPercent))
	}
	return out
}

// Validate checks what a flag type cannot, and reports malformed environment
// values. Every message names the flag and its environment variable.
func (o *Options) Validate() error {
	if o.sharedClusterName != nil {
		o.ClusterName = o.sharedClusterName.Value.String()
	}
	var errs []error
	if o.env != nil {
		errs = append(errs, o.env.Err())
	}
	if strings.TrimSpace(o.ClusterName) == "" {
		errs = append(errs, errors.New("cluster-name (CLUSTER_NAME) is required for the aws cloud provider"))
	}
	// Upstream refuses only negative values; 1 or more is accepted (and
	// warned about in SettingWarnings).
	if o.VMMemoryOverheadPercent < 0 {
		errs = append(errs, fmt.Errorf("vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) %v: must not be negative; a fraction such as 0.075", o.VMMemoryOverheadPercent))
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("reserved-enis (RESERVED_ENIS) %d: must not be negative", o.ReservedENIs))
	}
	if o.ClusterEndpoint != "" && !strings.HasPrefix(o.ClusterEndpoint, "https://") && !strings.HasPrefix(o.ClusterEndpoint, "http://") {
		errs = append(errs, fmt.Errorf("cluster-endpoint (CLUSTER_ENDPOINT) %q: must be a URL such as https://ABC.gr7.us-west-2.eks.amazonaws.com", o.ClusterEndpoint))
	}
	if o.AMIRefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("ami-refresh-interval (AMI_REFRESH_INTERVAL) %s: must be positive", o.AMIRefreshInterval))
	}
	if o.SubnetRefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("subnet-refresh-interval (SUBNET_REFRESH_INTERVAL) %s: must be positive", o.SubnetRefreshInterval))
	}
	if o.SecurityGroupRefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("security-group-refresh-interval (SECURITY_GROUP_REFRESH_INTERVAL) %s: must be positive", o.SecurityGroupRefreshInterval))
	}
	gates, err := options.ParseGateSet("aws-feature-gates", "AWS_FEATURE_GATES", Gates, o.featureGates)
	o.FeatureGates = gates
	errs = append(errs, err)
	return errors.Join(errs...)
}

// LoadAWSConfig loads the SDK configuration the standard way (environment,
// shared config files, AWS_ENDPOINT_URL[_<SERVICE>]), with the aws_sdk_go_*
// request metrics installed, and fails with a clear message when no region is
// configured.
func LoadAWSConfig(ctx context.Context, optFns ...func(*awsconfig.LoadOptions) error) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS SDK configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region configured: set AWS_REGION (or region in the shared config file)")
	}
	sdkmetrics.Install(&cfg)
	return cfg, nil
}
