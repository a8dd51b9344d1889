package awserr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestClassification(t *testing.T) {
	wrap := func(code string, fault smithy.ErrorFault) error {
		return fmt.Errorf("operation error: %w", &smithy.GenericAPIError{Code: code, Message: "msg", Fault: fault})
	}
	cases := []struct {
		err                                                  error
		notFound, unauthorized, dryRun, throttled, retryable bool
	}{
		{err: wrap("NoSuchEntity", smithy.FaultClient), notFound: true},
		{err: wrap("ParameterNotFound", smithy.FaultClient), notFound: true},
		{err: wrap("UnauthorizedOperation", smithy.FaultClient), unauthorized: true},
		{err: wrap("DryRunOperation", smithy.FaultClient), dryRun: true},
		{err: wrap("RequestLimitExceeded", smithy.FaultClient), throttled: true, retryable: true},
		{err: wrap("InternalError", smithy.FaultServer), retryable: true},
		{err: wrap("InvalidParameterValue", smithy.FaultClient)},
		{err: errors.New("dial tcp: connection refused"), retryable: true},
	}
	for _, c := range cases {
		if IsNotFound(c.err) != c.notFound || IsUnauthorized(c.err) != c.unauthorized || IsDryRunSuccess(c.err) != c.dryRun ||
			IsThrottled(c.err) != c.throttled || IsRetryable(c.err) != c.retryable {
			t.Errorf("%v: notFound=%v unauthorized=%v dryRun=%v throttled=%v retryable=%v", c.err,
				IsNotFound(c.err), IsUnauthorized(c.err), IsDryRunSuccess(c.err), IsThrottled(c.err), IsRetryable(c.err))
		}
	}
	if m := Message(wrap("NoSuchEntity", smithy.FaultClient)); m != "NoSuchEntity: msg" {
		t.Errorf("Message = %q", m)
	}
	if IsRetryable(nil) || Code(nil) != "" || Message(nil) != "" {
		t.Error("nil error")
	}
}
