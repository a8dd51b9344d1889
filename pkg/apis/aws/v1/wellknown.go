package v1

import (
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// The tenancies Karpenter launches: a NodePool requiring
// karpenter.k8s.aws/instance-tenancy In only other values (host, say) fails
// validation, as upstream's.
func init() {
	karpv1.WellKnownValuesForRequirements[LabelInstanceTenancy] = []string{InstanceTenancyDedicated, InstanceTenancyDefault}
}
