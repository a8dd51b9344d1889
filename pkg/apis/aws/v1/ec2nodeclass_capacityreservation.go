package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// ConditionTypeCapacityReservationsReady is True when every
// capacityReservationSelectorTerm matched at least one reservation. It only
// takes part in Ready when the class selects reservations, so classes
// without reservations are not held back by it.
const ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"

// CapacityReservationSelectorTerm selects EC2 capacity reservations (On-Demand
// Capacity Reservations and Capacity Blocks) by id, or by tags, owner and
// instance match criteria. Its fields are ANDed.
type CapacityReservationSelectorTerm struct {
	// Tags selects reservations carrying every listed tag. The value "*"
	// matches any value of the key.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one reservation by its id (cr-...).
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the AWS account id that owns the reservation, for
	// reservations shared with this account.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects reservations by how they accept
	// instances: open reservations are used by any matching instance,
	// targeted ones only by launches that name them.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// CapacityReservationType is the kind of a reservation.
// +kubebuilder:validation:Enum:={default,capacity-block}
type CapacityReservationType string

const (
	// CapacityReservationTypeDefault is an On-Demand Capacity Reservation.
	CapacityReservationTypeDefault CapacityReservationType = "default"
	// CapacityReservationTypeCapacityBlock is a Capacity Block for ML,
	// reserved for a fixed window and reclaimed at its end.
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is how much longer a reservation can be used.
// +kubebuilder:validation:Enum:={active,expiring}
type CapacityReservationState string

const (
	// CapacityReservationStateActive reservations accept new instances.
	CapacityReservationStateActive CapacityReservationState = "active"
	// CapacityReservationStateExpiring reservations are near their end
	// (capacity blocks in their last minutes) and take no new instances.
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)

// CapacityReservation is a reservation that capacityReservationSelectorTerms
// resolved to.
type CapacityReservation struct {
	// AvailabilityZone the reservation's capacity is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// EndTime is when the reservation ends; unset for reservations without end.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// ID of the reservation.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// InstanceMatchCriteria is open or targeted.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// InstanceType the reservation holds capacity for.
	// +required
	InstanceType string `json:"instanceType"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is default (On-Demand Capacity Reservation) or capacity-block.
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// Interruptible reservations may be reclaimed by their owner.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// State is active or expiring.
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
}

// statusConditionTypesWithReservations adds CapacityReservationsReady to
// Ready for classes that select reservations.
var statusConditionTypesWithReservations = status.NewReadyConditions(
	append(StatusConditionTypes.Dependents(), ConditionTypeCapacityReservationsReady)...,
)
