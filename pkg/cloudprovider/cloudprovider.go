// Package cloudprovider is the contract between Karpenter's controllers and the
// infrastructure that runs nodes. Nothing outside pkg/providers/<name> and
// the registry that lists them (pkg/providers) knows which provider is in
// use: controllers hold a CloudProvider and act through it, and
// kubectl-karpenter plans and prices through each provider's Offline side.
//
// A provider plugs in as one Bundle (bundle.go): its CloudProvider, its own
// controllers, its well-known labels and NodeClass label, built by a Provider
// that also owns the provider's settings, its read-only side (offline.go)
// and its RBAC rules. Adding a provider is a package pkg/providers/<name>
// with a constructor returning its Provider, its NodeClass API, and one line
// each in pkg/providers.All and pkg/apis (docs/architecture.md).
//
// The package is a leaf: it imports no project package but the APIs and
// pkg/scheduling, so every provider can implement it.
package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// CloudProvider launches and removes the instances behind NodeClaims.
//
// Crash safety rests on two rules every implementation keeps: the NodeClaim exists
// before Create is called, and every instance is tagged with the name of the
// NodeClaim it was launched for, so List can be reconciled against NodeClaims by
// garbage collection after a crash at any point.
type CloudProvider interface {
	// Create launches an instance for the NodeClaim and returns the NodeClaim as
	// launched: status.providerID, status.capacity and status.allocatable set, and the
	// labels the instance resolved (instance type, zone, capacity type, arch, os, ...).
	// It returns an *InsufficientCapacityError when no compatible offering could be
	// had, a *NodeClassNotReadyError when the NodeClass cannot be used yet, and a
	// *CreateError (with a reason) for other failures.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the instance. It returns a *NodeClaimNotFoundError once the
	// instance is gone, so callers can tell "done" from "in progress".
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns the NodeClaim view of the instance with this provider ID, or a
	// *NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns every instance this provider launched for the cluster, as NodeClaims
	// (name = the NodeClaim the instance was tagged with).
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns what the NodePool's NodeClass can launch, with offerings
	// (zone, capacity type, price, availability).
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
	// IsDrifted reports why the instance no longer matches its NodeClass, or "".
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions that make a node unhealthy, and
	// how long each is tolerated before the node is repaired (NodeRepair gate).
	RepairPolicies() []RepairPolicy
	// Reboot restarts the instance in place. operationID names one reboot
	// (the same across retries of it) for providers that can deduplicate
	// requests. It returns once the provider accepted the request; the reboot
	// controller watches the Node come back. A provider that cannot reboot
	// returns a *NodeRebootNotImplementedError; a refusal retrying cannot
	// change (a missing permission) is a *NodeRebootFailedError.
	Reboot(ctx context.Context, nodeClaim *v1.NodeClaim, operationID string) error
	// Name of the provider, e.g. "kwok" or "aws".
	Name() string
	// GetSupportedNodeClasses returns an empty object of each NodeClass kind the
	// provider understands; the first is the default.
	GetSupportedNodeClasses() []client.Object
}

// DriftReason says why a NodeClaim drifted; "" means it has not.
type DriftReason string

// RepairAction is what a repair policy asks for (upstream's values).
type RepairAction string

const (
	// ReplaceNode replaces the unhealthy node.
	ReplaceNode RepairAction = "ReplaceNode"
	// RebootNode reboots the node in place (the cloud provider's Reboot);
	// a node that does not come back healthy is replaced.
	RebootNode RepairAction = "RebootNode"
)

// RepairPolicy says when a node with a given condition is unhealthy and how
// it is repaired (upstream's fields). The NodeRepair gate turns node repair
// on; pkg/disruption's repair method reads the policies.
type RepairPolicy struct {
	// ConditionType and ConditionStatus name the Node condition that makes a
	// node unhealthy, e.g. Ready=False.
	ConditionType   corev1.NodeConditionType
	ConditionStatus corev1.ConditionStatus
	// ReasonRegex, a Go regular expression, narrows the policy to the
	// condition reasons it matches. The one policy of a set without it is the
	// set's fallback: it applies to any condition type and status of the set
	// whose reason no narrower policy of that type and status matches.
	ReasonRegex string
	// TolerationDuration: the node is repaired once the condition has held
	// this long (counted from its last transition, or from the Node's
	// creation if later).
	TolerationDuration time.Duration
	// TerminationGracePeriod bounds the drain of a repaired node: nil keeps
	// the NodeClaim's terminationGracePeriod, a positive value is the lesser
	// of the two, 0 deletes the node's pods without waiting for PDBs or
	// karpenter.sh/do-not-disrupt.
	TerminationGracePeriod *time.Duration
	// Priority, 0 to 100, orders repairs: higher first.
	Priority int
	// Action is what the policy asks for; "" means ReplaceNode.
	Action RepairAction
}

// NodeRebootNotImplementedError: the cloud provider cannot reboot instances.
type NodeRebootNotImplementedError struct{}

func (e *NodeRebootNotImplementedError) Error() string {
	return "reboot is not implemented by this cloud provider"
}

// NewNodeRebootNotImplementedError returns the error.
func NewNodeRebootNotImplementedError() *NodeRebootNotImplementedError {
	return &NodeRebootNotImplementedError{}
}

// IsNodeRebootNotImplementedError reports whether err is (or wraps) one.
func IsNodeRebootNotImplementedError(err error) bool {
	var e *NodeRebootNotImplementedError
	return errors.As(err, &e)
}

// NodeRebootFailedError: the cloud provider refused a reboot in a way
// retrying cannot change (e.g. a missing permission).
type NodeRebootFailedError struct{ Err error }

func (e *NodeRebootFailedError) Error() string { return fmt.Sprintf("reboot failed, %v", e.Err) }
func (e *NodeRebootFailedError) Unwrap() error { return e.Err }

// NewNodeRebootFailedError wraps err.
func NewNodeRebootFailedError(err error) *NodeRebootFailedError {
	return &NodeRebootFailedError{Err: err}
}

// IsNodeRebootFailedError reports whether err is (or wraps) one.
func IsNodeRebootFailedError(err error) bool {
	var e *NodeRebootFailedError
	return errors.As(err, &e)
}

// NodeClaimNotFoundError: the instance does not exist (any more).
type NodeClaimNotFoundError struct{ Err error }

func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found, %v", e.Err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// NewNodeClaimNotFoundError wraps err.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{Err: err}
}

// IsNodeClaimNotFoundError reports whether err is (or wraps) a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var e *NodeClaimNotFoundError
	return errors.As(err, &e)
}

// InsufficientCapacityError: no offering compatible with the NodeClaim could be had.
// The NodeClaim is deleted and its pods are provisioned again elsewhere.
type InsufficientCapacityError struct{ Err error }

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity, %v", e.Err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// NewInsufficientCapacityError wraps err.
func NewInsufficientCapacityError(err error) *InsufficientCapacityError {
	return &InsufficientCapacityError{Err: err}
}

// IsInsufficientCapacityError reports whether err is (or wraps) one.
func IsInsufficientCapacityError(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// NodeClassNotReadyError: the NodeClass exists but cannot be used yet.
type NodeClassNotReadyError struct{ Err error }

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("NodeClassRef not ready, %v", e.Err)
}
func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// NewNodeClassNotReadyError wraps err.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{Err: err}
}

// IsNodeClassNotReadyError reports whether err is (or wraps) one.
func IsNodeClassNotReadyError(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// CreateError is a launch failure with a machine-readable reason (it becomes the
// reason of the NodeClaim's Launched=False condition) and a message for users.
type CreateError struct {
	Err              error
	ConditionReason  string
	ConditionMessage string
}

func (e *CreateError) Error() string { return fmt.Sprintf("creating nodeclaim, %v", e.Err) }
func (e *CreateError) Unwrap() error { return e.Err }

// NewCreateError wraps err with a reason and message.
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{Err: err, ConditionReason: reason, ConditionMessage: message}
}

// IsCreateError reports whether err is (or wraps) one.
func IsCreateError(err error) bool {
	var e *CreateError
	return errors.As(err, &e)
}

// UnevaluatedNodePoolError: the NodeOverlays have not been evaluated against
// the NodePool yet (the NodeOverlay gate is on and the overlay controller has
// not seen the NodePool), so its instance types cannot be priced as the
// overlays say. Callers skip the NodePool until the evaluation is done.
type UnevaluatedNodePoolError struct{ NodePool string }

func (e *UnevaluatedNodePoolError) Error() string {
	return fmt.Sprintf("nodepool %s has not been evaluated against the NodeOverlays yet", e.NodePool)
}

// NewUnevaluatedNodePoolError names the NodePool.
func NewUnevaluatedNodePoolError(nodePool string) *UnevaluatedNodePoolError {
	return &UnevaluatedNodePoolError{NodePool: nodePool}
}

// IsUnevaluatedNodePoolError reports whether err is (or wraps) one.
func IsUnevaluatedNodePoolError(err error) bool {
	var e *UnevaluatedNodePoolError
	return errors.As(err, &e)
}

// InstanceTypeOverlay applies the NodeOverlays to the instance types of a
// NodePool (pkg/cloudprovider/overlay's Store): what GetInstanceTypes
// returns through the overlay decorator.
type InstanceTypeOverlay interface {
	ApplyAll(nodePool string, its []*scheduling.InstanceType) ([]*scheduling.InstanceType, error)
}

// OverlayAware is implemented by a provider whose Create resolves instance
// types itself: with the NodeOverlay gate it is given the overlays, so that
// a launch chooses among the instance types as the scheduler saw them
// (overlaid prices, extended resources an overlay added).
type OverlayAware interface {
	SetInstanceTypeOverlay(InstanceTypeOverlay)
}
