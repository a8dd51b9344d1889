package amifamily

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// LaunchOptions: what a launch template needs from outside the EC2NodeClass.
type LaunchOptions struct {
	ClusterName      string
	ClusterEndpoint  string            // https://...
	ClusterCABundle  string            // base64 PEM, may be ""
	ClusterCIDR      string            // service CIDR, e.g. "10.100.0.0/16" (AL2023's NodeConfig needs it)
	KubeDNSIP        string            // e.g. "10.100.0.10" ("" = family default)
	InstanceProfile  string            // name (nc.Status.InstanceProfile)
	SecurityGroupIDs []string          // nc.Status.SecurityGroups ids
	Tags             map[string]string // for the LT and its instance/volume/network-interface tag specs
	Labels           map[string]string // node labels the kubelet registers with
	Taints           []corev1.Taint    // NodeClaim spec taints + startupTaints + karpenter.sh/unregistered:NoExecute
	NodeClassName    string
}

// LaunchTemplate: one resolved option set = one EC2 launch template.
type LaunchTemplate struct {
	LaunchOptions
	ImageID                  string
	UserData                 string                      // plain text; the launchtemplate package base64-encodes
	BlockDeviceMappings      []*awsv1.BlockDeviceMapping // family defaults when the class has none
	MetadataOptions          *awsv1.MetadataOptions      // class value or v1 default
	DetailedMonitoring       bool
	AssociatePublicIPAddress *bool
	InstanceStorePolicy      *awsv1.InstanceStorePolicy
	EFACount                 int
	CapacityType             string                     // karpenter.sh/capacity-type value
	InstanceTypes            []*scheduling.InstanceType // the subset launchable with this template
}

// Resolver turns an EC2NodeClass, a NodeClaim and candidate instance types
// into launch template option sets.
type Resolver struct{}

// NewResolver returns a Resolver.
func NewResolver() *Resolver { return &Resolver{} }

// Resolve groups instanceTypes by AMI, by max pods when the family writes
// max-pods into user data, and by EFA count: one LaunchTemplate per group.
func (r *Resolver) Resolve(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, instanceTypes []*scheduling.InstanceType, capacityType string, opts LaunchOptions) ([]*LaunchTemplate, error) {
	return nil, errors.New("amifamily: Resolve not implemented yet")
}
