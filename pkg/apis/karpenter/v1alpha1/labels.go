package v1alpha1

// Annotations the provisioner writes on a NodeClaim whose instance type
// options include one a NodeOverlay changed (upstream's keys).
const (
	// PriceOverlayAppliedAnnotationKey ("true"): a NodeOverlay set or
	// adjusted the price of at least one of the NodeClaim's instance type
	// options. The AWS provider then launches with a prioritized allocation
	// strategy, in the order of those prices.
	PriceOverlayAppliedAnnotationKey = "karpenter.sh/price-overlay-applied"
	// CapacityOverlayAppliedAnnotationKey ("true"): a NodeOverlay added
	// capacity to at least one of the NodeClaim's instance type options.
	CapacityOverlayAppliedAnnotationKey = "karpenter.sh/capacity-overlay-applied"
)
