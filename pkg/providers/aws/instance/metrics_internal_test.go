package instance

import "testing"

func TestLaunchFailureReason(t *testing.T) {
	for _, tc := range []struct{ code, message, want string }{
		{"InsufficientInstanceCapacity", "no capacity", "LaunchFailed"},
		{"VcpuLimitExceeded", "", "VCPULimitExceeded"},
		{"UnauthorizedOperation", "You are not authorized", "Unauthorized"},
		{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "", "SpotSLRCreationFailed"},
		{"UnauthorizedOperation", "Not authorized for images: [ami-1]", "AMIAuthorizationFailure"},
		{"InvalidAMIID.NotFound", "", "AMINotFound"},
		{"InsufficientFreeAddressesInSubnet", "", "InsufficientFreeAddressesInSubnet"},
		{"MaxSpotInstanceCountExceeded", "", "SpotQuotaExceeded"},
	} {
		if got := launchFailureReason(tc.code, tc.message); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.code, tc.message, got, tc.want)
		}
	}
}
