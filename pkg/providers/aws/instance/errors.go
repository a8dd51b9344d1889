package instance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// unfulfillable are the fleet error codes that say a pool has no capacity
// for us now (upstream's list): the offering is taken out of launches for a
// while and the NodeClaim is retried elsewhere.
var unfulfillable = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	"MaxFleetCountExceeded":             true,
	"ReservationCapacityExceeded":       true,
}

// ReasonNetworkInterfacesRefused is the Launched condition reason of a
// launch whose fleet EC2 refused for the class's spec.networkInterfaces.
const ReasonNetworkInterfacesRefused = "NetworkInterfacesRefused"

const (
	codeSubnetFull            = "InsufficientFreeAddressesInSubnet"
	codeSpotServiceLinkedRole = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
)

// IsUnfulfillableCapacity reports a fleet error code that means no capacity.
func IsUnfulfillableCapacity(code string) bool { return unfulfillable[code] }

func isLaunchTemplateNotFound(err error) bool {
	var fe *fleetErrors
	if errors.As(err, &fe) {
		for _, e := range fe.errs {
			if launchTemplateNotFoundCode(aws.ToString(e.ErrorCode)) {
				return true
			}
		}
		return false
	}
	return launchTemplateNotFoundCode(awserr.Code(err))
}

func launchTemplateNotFoundCode(code string) bool {
	return code == "InvalidLaunchTemplateName.NotFoundException" || code == "InvalidLaunchTemplateId.NotFound"
}

// markUnavailable records the pools the fleet could not fill.
func (p *Provider) markUnavailable(ctx context.Context, errs []ec2types.CreateFleetError, capacityType string, subnets map[string]subnet.Subnet, placement launchtemplate.Placement) {
	group, partition := placement.GroupID, ""
	if placement.Partition > 0 {
		partition = strconv.Itoa(int(placement.Partition))
	}
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		var it, zone, subnetID string
		if lto := e.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			it = string(lto.Overrides.InstanceType)
			zone = aws.ToString(lto.Overrides.AvailabilityZone)
			subnetID = aws.ToString(lto.Overrides.SubnetId)
			if zone == "" {
				for z, s := range subnets {
					if s.ID == subnetID {
						zone = z
					}
				}
			}
		}
		if subnetID == "" && zone != "" {
			subnetID = subnets[zone].ID
		}
		launchFailures.WithLabelValues(zone, subnets[zone].ZoneID, capacityType, launchFailureReason(code, aws.ToString(e.ErrorMessage))).Inc()
		if code == codeSubnetFull && subnetID != "" {
			// The subnet, not its zone, is out of addresses (upstream's
			// handling): it is marked for the TTL, so the zone's offerings
			// go only once every subnet of the class there is marked, and it
			// counts as having no free address, so the next launch into
			// the zone picks another of its subnets. The pool itself is
			// also marked below, like any unfulfillable pool, as upstream.
			p.unavailable.MarkSubnetUnavailable(subnetID)
			p.subnets.MarkExhausted(subnetID)
			log.FromContext(ctx).V(1).Info("subnet out of addresses", "subnet", subnetID, "zone", zone)
		}
		switch {
		case code == codeSpotServiceLinkedRole && capacityType == scheduling.CapacityTypeSpot:
			// Spot cannot be used until the role exists: every spot offering.
			p.unavailable.MarkCapacityTypeUnavailable(scheduling.CapacityTypeSpot)
		case unfulfillable[code] && zone != "" && group != "" && strings.Contains(aws.ToString(e.ErrorMessage), spreadLimitMessage):
			// A spread group holds seven instances per zone, whatever their type.
			p.unavailable.MarkZoneUnavailableInGroup(group, capacityType, zone)
		case unfulfillable[code] && it != "" && zone != "" && group != "":
			// In a placement group, the group's (or the targeted partition's)
			// room is what ran out.
			p.unavailable.MarkUnavailableInGroup(group, partition, capacityType, it, zone)
		case unfulfillable[code] && it != "" && zone != "":
			p.unavailable.MarkUnavailable(capacityType, it, zone)
		default:
			continue
		}
		log.FromContext(ctx).V(1).Info("offering unavailable", "code", code, "capacityType", capacityType, "instanceType", it, "zone", zone)
	}
}

// spreadLimitMessage is in EC2's error for a spread placement group that
// already holds seven instances in the zone.
const spreadLimitMessage = "limit of instances in this spread placement group"

// fleetErrors are the errors of a fleet that launched nothing.
type fleetErrors struct{ errs []ec2types.CreateFleetError }

func (f *fleetErrors) Error() string {
	seen := map[string]bool{}
	var parts []string
	for _, e := range f.errs {
		s := aws.ToString(e.ErrorCode) + ": " + aws.ToString(e.ErrorMessage)
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	sort.Strings(parts)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return "creating fleet: " + strings.Join(parts, "; ")
}

// fleetError classifies a fleet that launched nothing: capacity errors only
// is insufficient capacity (retry elsewhere), anything else a launch failure.
func fleetError(errs []ec2types.CreateFleetError, capacityType string) error {
	fe := &fleetErrors{errs: errs}
	if len(errs) == 0 {
		return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("creating fleet: no %s instance launched and no error reported", capacityType))
	}
	if isLaunchTemplateNotFound(fe) {
		return fe
	}
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		if !unfulfillable[code] && code != codeSpotServiceLinkedRole {
			return cloudprovider.NewCreateError(fe, "FleetCreationFailed", fe.Error())
		}
	}
	return cloudprovider.NewInsufficientCapacityError(fe)
}

// interfacesRefused names spec.networkInterfaces in a launch failure whose
// fleet errors are EC2 refusing the class's network interfaces for the
// instance type (an EFA interface on a type without EFA, a network card or
// device index the type does not have), so that the NodeClaim's Launched
// condition and event point at the field to change.
func interfacesRefused(nc *awsv1.EC2NodeClass, errs []ec2types.CreateFleetError, err error) error {
	var createErr *cloudprovider.CreateError
	if len(nc.Spec.NetworkInterfaces) == 0 || !errors.As(err, &createErr) {
		return err
	}
	for _, e := range errs {
		code, msg := aws.ToString(e.ErrorCode), strings.ToLower(aws.ToString(e.ErrorMessage))
		if code != "InvalidParameterCombination" && code != "InvalidParameterValue" {
			continue
		}
		if strings.Contains(msg, "efa") || strings.Contains(msg, "elastic fabric") || strings.Contains(msg, "network card") ||
			strings.Contains(msg, "device index") || strings.Contains(msg, "interface") {
			wrapped := fmt.Errorf("EC2 refused the network interfaces of EC2NodeClass %q (spec.networkInterfaces) for the instance type: %w", nc.Name, createErr.Err)
			return cloudprovider.NewCreateError(wrapped, ReasonNetworkInterfacesRefused, wrapped.Error())
		}
	}
	return err
}
