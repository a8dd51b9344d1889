// Package awserr classifies the errors aws-sdk-go-v2 returns by their AWS
// error code, the one stable part of an AWS error across services and SDK
// versions.
package awserr

import (
	"errors"
	"strings"

	"github.com/aws/smithy-go"
)

// Code is the AWS error code of err ("" when err is not an AWS API error).
func Code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// Message is "Code: message" of an AWS API error, without the SDK's operation
// and request-id decoration, for condition messages; other errors as is.
func Message(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if m := apiErr.ErrorMessage(); m != "" {
			return apiErr.ErrorCode() + ": " + m
		}
		return apiErr.ErrorCode()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

var notFound = map[string]bool{
	"NoSuchEntity":                                true, // IAM
	"ParameterNotFound":                           true, // SSM
	"ParameterVersionNotFound":                    true, // SSM
	"ResourceNotFoundException":                   true, // EKS
	"InvalidSubnetID.NotFound":                    true,
	"InvalidGroup.NotFound":                       true,
	"InvalidAMIID.NotFound":                       true,
	"InvalidLaunchTemplateName.NotFoundException": true,
	"InvalidLaunchTemplateId.NotFound":            true,
}

// IsNotFound reports whether err says the named resource does not exist.
func IsNotFound(err error) bool { return notFound[Code(err)] }

// IsUnauthorized reports whether the caller lacks permission for the call.
func IsUnauthorized(err error) bool {
	switch Code(err) {
	case "UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "UnauthorizedAccess":
		return true
	}
	return false
}

// IsDryRunSuccess reports the answer EC2 gives to an authorized dry run.
func IsDryRunSuccess(err error) bool { return Code(err) == "DryRunOperation" }

// IsThrottled reports request-rate errors (after the SDK's own retries).
func IsThrottled(err error) bool {
	switch Code(err) {
	case "RequestLimitExceeded", "Throttling", "ThrottlingException", "ThrottledException",
		"TooManyRequestsException", "RequestThrottled", "RequestThrottledException", "SlowDown", "PriorRequestNotComplete":
		return true
	}
	return false
}

// IsServerError reports AWS-side failures worth retrying later.
func IsServerError(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if apiErr.ErrorFault() == smithy.FaultServer {
			return true
		}
		c := apiErr.ErrorCode()
		return c == "InternalError" || c == "InternalFailure" || c == "ServiceUnavailable" || strings.HasSuffix(c, "Unavailable")
	}
	return false
}

// IsRetryable reports errors that say nothing about the request itself
// (throttling, AWS-side failures, the network), as opposed to bad input.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if IsThrottled(err) || IsServerError(err) {
		return true
	}
	var apiErr smithy.APIError
	// Not an AWS answer at all: transport failure, canceled context.
	return !errors.As(err, &apiErr)
}
