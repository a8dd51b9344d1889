package awsemulator

import (
	"math"
	"strings"
	"sync"
	"time"
)

// Fault makes matching requests fail or slow down, for retry and resilience tests.
type Fault struct {
	Service, Action string // "" matches any
	// Code is the AWS error code answered, e.g. "RequestLimitExceeded", "InternalError";
	// the HTTP status follows from it as AWS sends it (503 for EC2's RequestLimitExceeded,
	// 400 for Throttling, 500 for InternalError, 503 for ServiceUnavailable). "" = latency only.
	Code string
	// Rate is the fraction of matching requests the fault fires on, 0..1; 0 means every one.
	// The sequence is deterministic: with 0.5 every second matching request fires.
	Rate float64
	// Count stops the fault after it fired N times (0 = unlimited).
	Count int
	// Latency is added before answering each request the fault fires on.
	Latency time.Duration
}

type activeFault struct {
	Fault
	seen, fired int
}

type faultSet struct {
	mu     sync.Mutex
	faults []*activeFault
}

// InjectFault adds a fault; faults apply in the order they were injected.
func (e *Emulator) InjectFault(f Fault) {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.faults = append(e.faults.faults, &activeFault{Fault: f})
}

// ClearFaults removes every fault.
func (e *Emulator) ClearFaults() {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.faults = nil
}

// match advances every matching fault's sequence and returns the error to answer (the
// first firing fault with a Code) and the summed latency of the firing faults.
func (s *faultSet) match(svc, action string, proto protocol) (*apiError, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err *apiError
	var latency time.Duration
	kept := s.faults[:0]
	for _, f := range s.faults {
		if f.Count > 0 && f.fired >= f.Count {
			continue // exhausted: dropped
		}
		kept = append(kept, f)
		if (f.Service != "" && !strings.EqualFold(f.Service, svc)) || (f.Action != "" && f.Action != action) {
			continue
		}
		rate := f.Rate
		if rate <= 0 || rate > 1 {
			rate = 1
		}
		f.seen++
		if math.Floor(float64(f.seen)*rate+1e-9) <= math.Floor(float64(f.seen-1)*rate+1e-9) {
			continue
		}
		f.fired++
		latency += f.Latency
		if f.Code != "" && err == nil {
			err = &apiError{Status: statusForCode(proto, f.Code), Code: f.Code, Message: faultMessage(f.Code)}
		}
	}
	s.faults = kept
	return err, latency
}
