package instance

import "github.com/prometheus/client_golang/prometheus"

// LaunchFailures and TerminationFailures expose the counters to the tests.
var LaunchFailures, TerminationFailures *prometheus.CounterVec = launchFailures, terminationFailures
