// Package aws is the AWS cloud provider: EC2 instances described by an
// EC2NodeClass. This part answers what can be launched (instance types with
// their offerings and prices); launching, deleting and listing instances land
// with issue 14.
package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// ProviderName is what Name returns.
const ProviderName = "aws"

// errLaunchNotImplemented is returned by the instance operations until the
// launch path (CreateFleet, launch templates, termination) exists.
var errLaunchNotImplemented = errors.New("the aws cloud provider cannot launch, delete or list EC2 instances yet (CreateFleet, launch templates and termination land with issue 14); it only resolves instance types and prices")

// CloudProvider is the AWS cloud provider.
type CloudProvider struct {
	kubeClient    client.Client
	instanceTypes *instancetype.Provider
	// Drift answers IsDrifted (nil: nothing drifts).
	Drift *Drift
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider; it reads EC2NodeClasses through kubeClient.
func New(kubeClient client.Client, instanceTypes *instancetype.Provider) *CloudProvider {
	return &CloudProvider{kubeClient: kubeClient, instanceTypes: instanceTypes}
}

// Name of the provider.
func (c *CloudProvider) Name() string { return ProviderName }

// GetSupportedNodeClasses: EC2NodeClass only.
func (c *CloudProvider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&awsv1.EC2NodeClass{}}
}

// RepairPolicies: the kubelet's Ready condition, and the conditions the EKS
// node monitoring agent reports, with upstream's tolerations.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
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
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("NodePool %q has no spec.template.spec.nodeClassRef", np.Name))
	}
	if ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("NodePool %q refers to %s.%s %q; the aws provider supports EC2NodeClass.%s only",
			np.Name, ref.Kind, ref.Group, ref.Name, awsv1.Group))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q of NodePool %q not found", ref.Name, np.Name))
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
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q is not ready: %s", nc.Name, msg))
	}
	return nc, nil
}

// Create is not implemented yet (issue 14).
func (c *CloudProvider) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, cloudprovider.NewCreateError(errLaunchNotImplemented, "LaunchNotImplemented", errLaunchNotImplemented.Error())
}

// Delete is not implemented yet (issue 14).
func (c *CloudProvider) Delete(context.Context, *v1.NodeClaim) error { return errLaunchNotImplemented }

// Get is not implemented yet (issue 14).
func (c *CloudProvider) Get(context.Context, string) (*v1.NodeClaim, error) {
	return nil, errLaunchNotImplemented
}

// List is not implemented yet (issue 14).
func (c *CloudProvider) List(context.Context) ([]*v1.NodeClaim, error) {
	return nil, errLaunchNotImplemented
}

// IsDrifted is Drift's answer (drift.go).
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return c.Drift.IsDrifted(ctx, nodeClaim)
}
