// Package aws is the AWS cloud provider: EC2 instances described by an
// EC2NodeClass. It answers what can be launched (instance types with their
// offerings and prices), launches through batched instant EC2 Fleets over
// launch templates, and lists, describes and terminates the instances.
package aws

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// ProviderName is what Name returns.
const ProviderName = "aws"

// CloudProvider is the AWS cloud provider.
type CloudProvider struct {
	kubeClient    client.Client
	instanceTypes *instancetype.Provider
	// drift answers IsDrifted (nil: nothing drifts; see WithDrift).
	drift *Drift
	// instances launches and terminates (nil: the provider only answers
	// what can be launched; Create, Get, List and Delete say so).
	instances   *instance.Provider
	clusterName string
	// Drift answers IsDrifted (nil: nothing drifts).
	Drift *Drift
	// overlays, with the NodeOverlay gate, are applied to the instance
	// types a launch chooses from (nil: none).
	overlays cloudprovider.InstanceTypeOverlay
	// rebootForRepair: the RebootForRepair gate (see WithRebootForRepair).
	rebootForRepair bool
}

// SetInstanceTypeOverlay makes Create choose among the instance types of the
// NodeClaim's NodePool as the NodeOverlays change them, as upstream's
// provider does.
func (c *CloudProvider) SetInstanceTypeOverlay(o cloudprovider.InstanceTypeOverlay) { c.overlays = o }

var _ cloudprovider.OverlayAware = &CloudProvider{}

// Option adjusts a CloudProvider.
type Option func(*CloudProvider)

// WithInstances lets the provider launch, list and terminate instances of
// the cluster clusterName.
func WithInstances(p *instance.Provider, clusterName string) Option {
	return func(c *CloudProvider) { c.instances, c.clusterName = p, clusterName }
}

// WithRebootForRepair (the RebootForRepair gate) makes the repair policy of
// reboot-clearable GPU faults reboot the node in place instead of replacing it.
func WithRebootForRepair(enabled bool) Option {
	return func(c *CloudProvider) { c.rebootForRepair = enabled }
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider; it reads EC2NodeClasses through kubeClient.
func New(kubeClient client.Client, instanceTypes *instancetype.Provider, opts ...Option) *CloudProvider {
	c := &CloudProvider{kubeClient: kubeClient, instanceTypes: instanceTypes}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Name of the provider.
func (c *CloudProvider) Name() string { return ProviderName }

// GetSupportedNodeClasses: EC2NodeClass only.
func (c *CloudProvider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&awsv1.EC2NodeClass{}}
}

// RepairPolicies (upstream's): the kubelet's Ready condition and the
// conditions the EKS node monitoring agent reports, replaced after 30 minutes
// (10 for GPU faults it recognises) with a bounded drain. GPU faults are told
// apart by the XID code in the condition's reason; an unrecognised one falls
// to the set's fallback. The reboot-clearable XIDs are rebooted with the
// RebootForRepair gate, replaced on the same timing without it.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	five, ten := 5*time.Minute, 10*time.Minute
	replace := func(t corev1.NodeConditionType, s corev1.ConditionStatus, regex string, toleration time.Duration, drain *time.Duration) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: t, ConditionStatus: s, ReasonRegex: regex, TolerationDuration: toleration,
			TerminationGracePeriod: drain, Action: cloudprovider.ReplaceNode}
	}
	rebootable := func(t corev1.NodeConditionType, s corev1.ConditionStatus, regex string, toleration time.Duration, drain *time.Duration) cloudprovider.RepairPolicy {
		p := replace(t, s, regex, toleration, drain)
		if c.rebootForRepair {
			p.Action = cloudprovider.RebootNode
		}
		return p
	}
	return []cloudprovider.RepairPolicy{
		replace(corev1.NodeReady, corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		replace(corev1.NodeReady, corev1.ConditionUnknown, ".*", 30*time.Minute, &ten),
		// Reboot-clearable GPU faults.
		rebootable("AcceleratedHardwareReady", corev1.ConditionFalse, `.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`, 10*time.Minute, &five),
		// Fatal GPU faults.
		replace("AcceleratedHardwareReady", corev1.ConditionFalse, `.*XID(64|74|79|119|120).*`, 10*time.Minute, &five),
		// The fallback: any other reason.
		replace("AcceleratedHardwareReady", corev1.ConditionFalse, "", 30*time.Minute, &ten),
		replace("StorageReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		replace("NetworkingReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		replace("KernelReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		replace("ContainerRuntimeReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
	}
}

// GetInstanceTypes lists what the NodePool's EC2NodeClass can launch. A
// NodeClass that is missing, being deleted or not Ready gives a
// *cloudprovider.NodeClassNotReadyError, so provisioning skips the NodePool
// and says why.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	nc, err := c.nodeClass(ctx, np)
	if err != nil {
		return nil, err
	}
	its, err := c.instanceTypes.List(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of EC2NodeClass %q: %w", nc.Name, err)
	}
	return its, nil
}

// nodeClass reads and checks the EC2NodeClass a NodePool refers to.
func (c *CloudProvider) nodeClass(ctx context.Context, np *v1.NodePool) (*awsv1.EC2NodeClass, error) {
	return c.nodeClassByRef(ctx, np.Spec.Template.Spec.NodeClassRef, "NodePool", np.Name)
}

// nodeClassByRef reads and checks the EC2NodeClass ref names; owner (kind,
// name) is what refers to it, for messages.
func (c *CloudProvider) nodeClassByRef(ctx context.Context, ref *v1.NodeClassReference, ownerKind, owner string) (*awsv1.EC2NodeClass, error) {
	if ref == nil {
		if ownerKind == "NodePool" {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("NodePool %q has no spec.template.spec.nodeClassRef", owner))
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %q has no spec.nodeClassRef", ownerKind, owner))
	}
	if ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %q refers to %s.%s %q; the aws provider supports EC2NodeClass.%s only",
			ownerKind, owner, ref.Kind, ref.Group, ref.Name, awsv1.Group))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q of %s %q not found", ref.Name, ownerKind, owner))
		}
		return nil, fmt.Errorf("getting EC2NodeClass %q: %w", ref.Name, err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q is being deleted", nc.Name))
	}
	if ready := nc.StatusConditions().Root(); ready == nil || !ready.IsTrue() {
		msg := "it has not been reconciled yet"
		if ready != nil && ready.Message != "" {
			msg = ready.Message
		}
		err := fmt.Errorf("EC2NodeClass %q is not ready: %s", nc.Name, msg)
		if ownerKind == "NodeClaim" && !ready.IsFalse() {
			// A launch waits while the class's readiness is not known yet
			// (it is retried, within the launch timeout); only Ready=False
			// deletes the NodeClaim.
			return nil, cloudprovider.NewCreateError(err, "NodeClassReadinessUnknown", "NodeClass is in Ready=Unknown")
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	return nc, nil
}

// IsDrifted is Drift's answer (drift.go).
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return c.drift.IsDrifted(ctx, nodeClaim)
}
