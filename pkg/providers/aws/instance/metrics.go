package instance

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Upstream's instance families: every CreateFleet offering error (one call
// can fail several offerings) by zone, zone ID, capacity type and a reason
// derived from the EC2 error code; and every failed TerminateInstances by zone
// and zone ID.
var (
	launchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_launch_failures_total",
		Help: "Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, zone ID, capacity type, and launch failure reason.",
	}, []string{"zone", "zone_id", "capacity_type", "reason"})
	terminationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_termination_failures_total",
		Help: "Number of instance termination (TerminateInstances) failures, dimensioned by availability zone and zone ID.",
	}, []string{"zone", "zone_id"})
)

func init() { crmetrics.Registry.MustRegister(launchFailures, terminationFailures) }

// launchFailureReasons map EC2 error codes (a substring of code and message)
// to upstream's launch failure reasons, first match wins; capacity errors come
// last, as a fleet error often quotes several codes.
var launchFailureReasons = []struct{ match, reason string }{
	{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "SpotSLRCreationFailed"},
	{"Not authorized for images", "AMIAuthorizationFailure"},
	{"UnauthorizedOperation", "Unauthorized"},
	{"AccessDenied", "Unauthorized"},
	{"AuthFailure", "Unauthorized"},
	{"belong to different networks", "SecurityGroupSubnetVPCMismatch"},
	{"iamInstanceProfile.name is invalid", "InstanceProfileNameInvalid"},
	{"InvalidLaunchTemplateId.NotFound", "LaunchTemplateNotFound"},
	{"User data is limited to", "UserDataSizeLimitExceeded"},
	{"InvalidAMIID.Malformed", "InvalidAMIID"},
	{"InvalidAMIID.NotFound", "AMINotFound"},
	{"RequestLimitExceeded", "RequestLimitExceeded"},
	{"InternalError", "InternalError"},
	{"not eligible for Free Tier", "FreeTierIneligible"},
	{"MaxFleetCountExceeded", "FleetQuotaExceeded"},
	{"PendingVerification", "AccountPendingVerification"},
	{"MaxSpotInstanceCountExceeded", "SpotQuotaExceeded"},
	{"VcpuLimitExceeded", "VCPULimitExceeded"},
	{"InsufficientFreeAddressesInSubnet", "InsufficientFreeAddressesInSubnet"},
}

// launchFailureReason is the reason label of a CreateFleet error.
func launchFailureReason(code, message string) string {
	text := code + ": " + message
	for _, r := range launchFailureReasons {
		if strings.Contains(text, r.match) {
			return r.reason
		}
	}
	return "LaunchFailed"
}
