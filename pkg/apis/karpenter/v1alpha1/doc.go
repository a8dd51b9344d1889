// Package v1alpha1 contains the karpenter.sh/v1alpha1 API: NodeOverlay.
//
// A NodeOverlay changes what the scheduler believes about the instance types
// its requirements select: their price (set outright or shifted by an amount
// or a percentage) and extra extended resources on the node. Karpenter stores
// NodeOverlays so that objects created for upstream Karpenter survive an
// upgrade or a switch; until the overlay behaviour is built they are not
// applied, and the controller says so at start-up (see pkg/operator).
//
// Validation lives in the CRD schema (OpenAPI + CEL) and gives the same
// verdict as upstream v1.15's on every object.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
