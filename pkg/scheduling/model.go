package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Well-known label keys the solver gives meaning to. They match upstream Karpenter's names.
const (
	LabelZone         = corev1.LabelTopologyZone
	LabelRegion       = corev1.LabelTopologyRegion
	LabelHostname     = corev1.LabelHostname
	LabelInstanceType = corev1.LabelInstanceTypeStable
	LabelArch         = corev1.LabelArchStable
	LabelOS           = corev1.LabelOSStable
	LabelWindowsBuild = corev1.LabelWindowsBuild
	LabelCapacityType = "karpenter.sh/capacity-type"
	LabelNodePool     = "karpenter.sh/nodepool"

	// Values of LabelCapacityType.
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// DefaultWellKnownLabels are keys a pod may require although a NodePool does not mention them,
// because every instance type or the cloud provider defines them on the node.
var DefaultWellKnownLabels = []string{
	LabelZone, LabelRegion, LabelInstanceType, LabelArch, LabelOS, LabelWindowsBuild, LabelCapacityType, LabelNodePool,
}

// Offering is one way to buy an instance type: a zone and a capacity type at a price.
type Offering struct {
	Zone         string
	CapacityType string
	Price        float64
	Available    bool
	// Requirements carries any further labels the offering implies (e.g. a reservation ID).
	Requirements Requirements
	// PriceOverlaid: Price is the provider's price as a NodeOverlay set or
	// adjusted it.
	PriceOverlaid bool
	// ReservationID names the capacity reservation a reserved offering launches into; offerings
	// of several instance types (or NodePools) that name the same ID share its capacity. Empty
	// for spot and on-demand offerings; a reserved offering without one is not counted.
	ReservationID string
	// ReservationCapacity is, for a reserved offering with a ReservationID, how many instances
	// its reservation can still take (upstream's Offering.ReservationCapacity; on AWS the
	// reservation's AvailableInstanceCount less launches the provider has not seen reflected
	// yet). A reservation with none left is full: its offering stays Available (it is healthy)
	// but launches nothing, and one Solve plans at most this many new claims into it.
	ReservationCapacity int
}

// Launchable reports whether a node can be launched with the offering now: it is Available
// and, when it is a counted reservation, the reservation has room for one more instance.
func (o *Offering) Launchable() bool {
	return o.Available && (o.ReservationID == "" || o.CapacityType != CapacityTypeReserved || o.ReservationCapacity > 0)
}

// compatible reports whether the offering is launchable and reqs allow it: its zone, its
// capacity type and any further labels it implies.
func (o *Offering) compatible(reqs Requirements) bool {
	if !o.Launchable() {
		return false
	}
	if !reqs.Has(LabelZone, o.Zone) || !reqs.Has(LabelCapacityType, o.CapacityType) {
		return false
	}
	return o.Requirements.Len() == 0 || reqs.Intersects(o.Requirements) == nil
}

// InstanceType is what the cloud provider can launch.
type InstanceType struct {
	Name string
	// Requirements are the labels every node of this type carries (arch, os, instance-type,
	// family, cpu count, ...). Zone and capacity type come from Offerings.
	Requirements Requirements
	Offerings    []Offering
	Capacity     corev1.ResourceList
	// Overhead is kube-reserved + system-reserved + eviction threshold.
	Overhead corev1.ResourceList
	// CapacityOverlaid: a NodeOverlay added resources to Capacity.
	CapacityOverlaid bool
}

// Allocatable is Capacity minus Overhead.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range it.Capacity {
		q = q.DeepCopy()
		if o, ok := it.Overhead[n]; ok {
			q.Sub(o)
		}
		out[n] = q
	}
	return out
}

// NodePool is the solver's view of a karpenter.sh/v1 NodePool, adapted by the provisioner.
type NodePool struct {
	Name string
	// Weight orders NodePools: higher first, ties by name.
	Weight int32
	// Requirements from spec.template.spec.requirements (with minValues).
	Requirements Requirements
	// Labels from spec.template.metadata.labels.
	Labels map[string]string
	// Taints must be tolerated by pods; StartupTaints are ignored for scheduling.
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Remaining is limits minus current usage; nil means unlimited. A resource named "nodes"
	// limits the number of nodes.
	Remaining corev1.ResourceList
	// InstanceTypes the cloud provider offers for this pool.
	InstanceTypes []*InstanceType
}

// ExistingNode is capacity that already exists or is already being created: a Node, or a
// NodeClaim launched but not registered yet (InFlight).
type ExistingNode struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	// StartupTaints are ignored (like ephemeral boot taints) while the node is not Initialized.
	StartupTaints []corev1.Taint
	Allocatable   corev1.ResourceList
	// Pods bound to the node; they consume resources and host ports and count for topology.
	Pods []*corev1.Pod
	// Initialized is false while the node starts; such a node (and an InFlight one) also has
	// the DaemonSet pods that will land on it, but are not bound yet, reserved.
	Initialized bool
	// InFlight marks a NodeClaim without a Node yet.
	InFlight bool
	// NodePool owning the node, "" when unmanaged.
	NodePool string
}

// PreferencePolicy says whether soft constraints are honoured (and relaxed on failure) or ignored.
type PreferencePolicy string

const (
	PreferencePolicyRespect PreferencePolicy = "Respect"
	PreferencePolicyIgnore  PreferencePolicy = "Ignore"
)

// MinValuesPolicy says whether minValues is a hard constraint.
type MinValuesPolicy string

const (
	MinValuesPolicyStrict     MinValuesPolicy = "Strict"
	MinValuesPolicyBestEffort MinValuesPolicy = "BestEffort"
)

// DefaultMaxInstanceTypes bounds the instance types listed per new claim (upstream's
// MaxInstanceTypes at the reference HEAD).
const DefaultMaxInstanceTypes = 600

// Options tune the solver. The zero value means upstream defaults.
type Options struct {
	PreferencePolicy PreferencePolicy
	MinValuesPolicy  MinValuesPolicy
	// MaxInstanceTypes per new claim; 0 means DefaultMaxInstanceTypes.
	MaxInstanceTypes int
	// WellKnownLabels replaces DefaultWellKnownLabels when non-nil (providers add their own).
	WellKnownLabels []string
	// SimulateDRARequests is IGNORE_DRA_REQUESTS=false. When it is unset (upstream's default,
	// IGNORE_DRA_REQUESTS=true) a pod with Dynamic Resource Allocation requests (HasDRARequests)
	// is refused with a DRAError, wherever it comes from (pending, or moving off a node being
	// disrupted), and a DaemonSet pod with such requests is no new node's overhead. When it is
	// set such pods are placed like any other: their claims are not simulated against
	// ResourceSlices, so the node chosen may lack the devices they claim.
	SimulateDRARequests bool
	// Repack re-packs, after placement, the new claims whose pods nothing but their
	// requirements places (no topology, affinity, host port or hostname constraint, counted by
	// no topology group) into the cheapest mix of nodes it finds, when that costs less than
	// the claims as placed (repack.go); then it moves pods into the idle room of claims whose
	// pods stay, where that lets the claims they leave take cheaper types (fillroom.go).
	Repack bool
}

// Input is a snapshot of everything the solver needs. It is not modified by Solve.
type Input struct {
	// Pods to place.
	Pods          []*corev1.Pod
	NodePools     []*NodePool
	ExistingNodes []*ExistingNode
	// DaemonSetPods are pod templates of DaemonSets; those a new node would run are its overhead.
	DaemonSetPods []*corev1.Pod
	// Namespaces maps namespace name to its labels, for pod affinity namespaceSelector.
	Namespaces map[string]map[string]string
	// Volumes: claims, volumes and classes referenced by the pods, to derive zone requirements.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	Options                Options
	// Cache, when set, carries pod-independent NodePool preparation across solves; without one
	// nothing is kept between solves.
	Cache *Cache
	// Prepared, when set, holds existing nodes read once for several solves (PrepareExisting):
	// the nodes of ExistingNodes found in it are not read again. ExistingNodes still lists the
	// nodes this solve may use.
	Prepared *ExistingSet
	// UnavailableNodePools launch nothing (not Ready, NodeClass missing, limits that admit no
	// node). They are not solved against, but a pod that cannot be placed names them among its
	// reasons, so that a pod selecting such a pool learns why it stays pending.
	UnavailableNodePools []*UnavailableNodePool
}

// UnavailableNodePool is a NodePool that may not launch, with why.
type UnavailableNodePool struct {
	// NodePool gives the name, requirements and labels; its instance types are not used.
	NodePool
	// Message is the whole reason as a user reads it, naming the pool.
	Message string
}

// ExistingPlacement is the pods placed on one existing or in-flight node.
type ExistingPlacement struct {
	Node *ExistingNode
	Pods []*corev1.Pod
}

// NewClaim is a NodeClaim the solver wants created.
type NewClaim struct {
	// Hostname is a placeholder name unique within the result.
	Hostname string
	NodePool *NodePool
	// Requirements: NodePool requirements and labels, narrowed by the pods (including topology
	// domains the solver pinned). Instance type and nodepool keys included.
	Requirements Requirements
	// InstanceTypes still compatible with every pod, cheapest first, truncated to
	// Options.MaxInstanceTypes (extended where minValues needs more values). Read-only: claims
	// with the same candidates share the slice.
	InstanceTypes []*InstanceType
	Pods          []*corev1.Pod
	// Requests sums the pods' requests; DaemonSetOverhead is what the claim requests for its
	// DaemonSets: per resource, the least that the daemons of one of its instance types request.
	// Both are read-only: claims with equal lists share them.
	Requests          corev1.ResourceList
	DaemonSetOverhead corev1.ResourceList
	// Price of the cheapest compatible available offering of the cheapest instance type.
	Price float64
	// MinValuesRelaxed is set when MinValuesPolicy=BestEffort let the claim fall short.
	MinValuesRelaxed bool
}

// Results of a Solve.
type Results struct {
	ExistingNodes []ExistingPlacement
	NewClaims     []*NewClaim
	// PodErrors holds, for every pod that could not be placed, a message a user can read.
	PodErrors map[*corev1.Pod]error
}

// TotalPrice sums the price of all new claims.
func (r *Results) TotalPrice() float64 {
	p := 0.0
	for _, c := range r.NewClaims {
		p += c.Price
	}
	return p
}
